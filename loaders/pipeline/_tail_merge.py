"""Tails merged across DataLoader workers: which worker merges, and the small shared board the workers decide on.

Each DataLoader worker packs its own items (``make_dataset``), so each ends its epoch pass with its own tail (the
packer's last pack, when below ``min_fill``: ``loaders.pipeline._tail``). With ``num_workers > 1`` the workers hand
their tails to one worker, the *merger*, which repacks them, so an epoch has one tail as in ``make_loader``::

    worker 0: full full full [tail0]  → publishes done, n_0 = 3, tail0 ─┐
    worker 1: full full full full [tail1] → done, n_1 = 4, tail1 ───────┼→ merger = max (n_w, w) = worker 1:
    worker 2: full full full [tail2]  → done, n_2 = 3, tail2 ─┘          repack tail0 + tail1 + tail2 → packs

The merger is the worker with the largest ``(n_w, w)``: ``n_w`` = batches it yielded this epoch (full packs),
``w`` = its worker id. It depends only on each worker's own (deterministic) stream, never on timing.

Why no worker can wait forever (torch 2.9 ``_MultiProcessingDataLoaderIter``, torchdata 0.11 ``StatefulDataLoader``,
iterable datasets, ``batch_size=None`` as documented): the main process hands tasks (one ``next()`` each: one batch)
to the active workers in a fixed cycle (``_try_put_index``: ids in order, stopped ones skipped), so
worker ``v``'s ``(c + 1)``-th task is dispatched before worker ``w``'s ``(n + 1)``-th iff ``(c, v) < (n, w)``, and a
worker runs a dispatched task whatever the main process consumes (results go to an unbounded queue; batch slots
never wait: ``loaders.pipeline._shared_slots``). A worker ``w`` in its tail phase (processing its ``(n_w + 1)``-th
task) stops at once when some ``v`` has published ``(count_v, v) > (n_w, w)`` (counts only grow: ``w`` is not the
largest); otherwise it waits only for workers with ``(count_v, v) < (n_w, w)`` that are not done, whose next task
is already dispatched: they progress, publish, and end or overtake. The largest worker sees every other one done and
merges. With ``in_order=False`` the main process takes whichever batch is ready and refills each worker as it
delivers, so the workers waited for progress too. A restored ``StatefulDataLoader`` marks every worker active and
starts its cycle after the last worker that yielded: the remaining tasks are again dispatched in ``(count, id)``
order; a worker restored after its end answers its first task with ``StopIteration``, after publishing its saved
count and tail again (``AVDataset``), and the merger restored while yielding the merged packs reads the tails it
saved. The batch stream is the workers' batches sorted by ``(index in its worker, worker id)``, the merger's last.
A waiting worker gives up with ``RuntimeError`` when a worker it waits for has exited unfinished (an epoch abandoned
by a non-persistent DataLoader: its workers exit, and this one must not hang until torch kills it), when the main
process has exited, or after :data:`MERGE_WAIT_SECONDS`. "Exited unfinished" is judged on a record read after the
exit was seen: a worker that stops exits within milliseconds of publishing ``done`` (torch sends it ``None`` as soon
as its ``StopIteration`` arrives, in order or not), so a record read just before can be stale.

The board: one directory per dataset (named in the process that builds it,
``avalign-tails-{its pid}-{random}-ns{its pid namespace}``, in ``/dev/shm`` when there is one; created by the first
worker pass that merges, so ``make_loader`` and single-worker runs never make one; removed when that process drops
the dataset or exits; a board whose process died without running its finalizer (SIGKILL, SIGTERM's default
action, ``os._exit``), untouched for :data:`MERGE_WAIT_SECONDS`, is removed when the next dataset is built: a job
killed and resumed again and again left one directory per kill in ``/dev/shm`` for good, soak66), one subdirectory
per pass of one pool of workers (:func:`pass_name`: no other pool, earlier, concurrent or restored from it,
shares it), one small JSON record per
worker (``w{id}.json``, replaced atomically): its running count, ``done``, its pid, and its tail's items (keys,
lengths, positions), with the decoded items beside it (``w{id}.items.pt``, ``torch.save``: loading them costs the
merger ~30x less CPU than decoding them again, BENCHMARKS.md). A worker restored after its end has only the
positions: the merger then decodes those samples again from the shards, as a resume does. The merger removes its
pass's other records once it has read them and keeps its own (the largest key, which tells any worker still deciding
to stop); subdirectories untouched for longer than the wait limit (finished passes, passes abandoned mid-way) are
removed when a pass begins.
"""
from __future__ import annotations

import json
import logging
import multiprocessing
import multiprocessing.util
import os
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Optional

logger = logging.getLogger(__name__)

__all__ = ["MERGE_WAIT_SECONDS", "PassRecord", "TailBoard", "pass_name"]

MERGE_WAIT_SECONDS = 900.0
"""How long a worker in its tail phase waits for the others before raising (they are a few batches away at most)."""
_POLL_SECONDS = 0.005
"""Sleep between two reads of the board while waiting."""
_PREFIX = "avalign-tails-"
"""Board directories are named ``{_PREFIX}{owner pid}-{random hex}-ns{pid namespace}`` (``-ns…`` where the process
can read ``/proc/self/ns/pid``; before adv67 there was none)."""


@dataclass(frozen=True)
class PassRecord:
    """What one worker has published in one pass."""

    worker_id: int
    count: int
    """Batches the worker has yielded this epoch (when ``done``: its full packs, ``n_w``)."""
    done: bool
    """The worker has yielded every full pack and deposited its tail."""
    pid: int
    tail: tuple = ()
    """The tail's items as ``{"key", "lengths", "payload"}`` dicts (payload: the item's position), in packer order."""


def pass_name(worker_info: Any, pass_index: int, restores: int) -> str:
    """The board subdirectory of the current DataLoader worker's pass: the same for every worker of one pass, and
    another for any other pass that can run at the same time or later over the same board.

    ``worker_info`` is ``torch.utils.data.get_worker_info()``; ``pass_index`` counts the passes (``iter()`` calls) of
    this dataset copy (persistent workers make several); ``restores`` counts the ``load_state_dict`` calls in the
    copy's lineage (a restored ``StatefulDataLoader`` reuses the saved base seed: with it, a restored pass never
    shares a directory with the pass it was saved from). The name also holds the parent's pid (a dataset pickled
    to spawned workers of two processes shares the board), the DataLoader's base seed (``seed - id``: drawn afresh
    for each iterator) and the worker *pool*: this process's ``multiprocessing`` number minus the worker id.
    torch creates one iterator's workers one after the other (``Process()`` in a loop), so every worker of a pool
    finds the same number, and numbers only grow in a process: two iterators of one dataset (an abandoned one
    whose workers still run, or a second restore from the same state) never share a directory. (A ``Process()``
    created by another thread of the parent between two worker starts would split a pool: its workers would
    wait for each other until :data:`MERGE_WAIT_SECONDS` and raise.)"""
    base_seed = int(worker_info.seed) - int(worker_info.id)
    identity = getattr(multiprocessing.current_process(), "_identity", ()) or (0,)
    pool = int(identity[-1]) - int(worker_info.id)
    return f"pass-{os.getppid()}-{pool}-{base_seed}-{int(restores)}-{int(pass_index)}"


class TailBoard:
    """The directory DataLoader workers of one dataset publish their counts and tails in (see the module docstring).

    Pickles as its path (spawned workers share the directory); only the process that created it removes it."""

    def __init__(self) -> None:
        parent = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
        self._owner_pid = os.getpid()
        namespace = _pid_namespace()
        self.root = os.path.join(parent, f"{_PREFIX}{self._owner_pid}-{secrets.token_hex(8)}"
                                 + ("" if namespace is None else f"-ns{namespace}"))
        """The board's directory, made by the first pass that merges (:meth:`begin`)."""
        remove_abandoned(parent)
        # Removed when the dataset is dropped, or at exit *after* multiprocessing has terminated and joined the
        # DataLoader workers (finalizers below priority 0 run then): a weakref.finalize ran first at exit, while
        # persistent workers still published their counts, and a worker's next record made the board again (soak66:
        # a training thread still iterating as the script ended left it 4 runs in 4).
        self._finalizer = multiprocessing.util.Finalize(self, _remove_if_owner, args=(self.root, self._owner_pid),
                                                        exitpriority=-50)

    def __getstate__(self) -> dict[str, Any]:
        return {"root": self.root, "_owner_pid": self._owner_pid}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.root = state["root"]
        self._owner_pid = state["_owner_pid"]

    def pass_dir(self, name: str) -> str:
        return os.path.join(self.root, name)

    def _make_root(self) -> None:
        try:
            os.mkdir(self.root, 0o700)  # private, as mkdtemp's; the random part of the name makes it unguessable
        except FileExistsError:
            pass

    def begin(self, name: str) -> None:
        """Creates the pass's subdirectory (and the board's, the first time); removes other passes' left untouched for
        longer than the wait limit."""
        self._make_root()
        os.makedirs(self.pass_dir(name), exist_ok=True)
        now = time.time()
        for entry in os.listdir(self.root):
            path = os.path.join(self.root, entry)
            if entry == name:
                continue
            try:
                if now - os.stat(path).st_mtime > MERGE_WAIT_SECONDS:
                    shutil.rmtree(path, ignore_errors=True)
            except FileNotFoundError:
                pass

    def publish(self, name: str, record: PassRecord) -> None:
        """Writes ``record`` (atomically: a reader sees the old or the new one)."""
        directory = self.pass_dir(name)
        self._make_root()
        os.makedirs(directory, exist_ok=True)
        data = {"worker_id": record.worker_id, "count": record.count, "done": record.done,
                "pid": record.pid, "tail": list(record.tail)}
        final = os.path.join(directory, f"w{record.worker_id}.json")
        temporary = f"{final}.{os.getpid()}.tmp"
        with open(temporary, "w") as f:
            json.dump(data, f)
        os.replace(temporary, final)

    def read(self, name: str, worker_id: int) -> Optional[PassRecord]:
        """Worker ``worker_id``'s record in this pass, or None (not published yet)."""
        path = os.path.join(self.pass_dir(name), f"w{worker_id}.json")
        try:
            with open(path) as f:
                data = json.load(f)
        except FileNotFoundError:
            return None
        return PassRecord(int(data["worker_id"]), int(data["count"]), bool(data["done"]), int(data["pid"]),
                          tuple(data["tail"]))

    def save_items(self, name: str, worker_id: int, items: dict) -> None:
        """Writes worker ``worker_id``'s decoded tail items (position → ``BatchItem``) for the merger (atomically;
        before the worker publishes ``done``, so the merger finds them complete)."""
        import torch

        final = os.path.join(self.pass_dir(name), f"w{worker_id}.items.pt")
        temporary = f"{final}.{os.getpid()}.tmp"
        torch.save(items, temporary)
        os.replace(temporary, final)

    def load_items(self, name: str, worker_id: int) -> dict:
        """Worker ``worker_id``'s saved tail items in this pass, or ``{}`` (none saved: a worker restored
        after its end publishes only positions, and the merger decodes those again)."""
        import torch

        path = os.path.join(self.pass_dir(name), f"w{worker_id}.items.pt")
        try:
            return torch.load(path, weights_only=False)  # written by a worker of this pass (save_items)
        except FileNotFoundError:
            return {}

    def decide(self, name: str, worker_id: int, num_workers: int, count: int, *,
               wait_seconds: float = MERGE_WAIT_SECONDS) -> Optional[dict[int, PassRecord]]:
        """In worker ``worker_id``'s tail phase (done, ``count`` full packs): None when another worker has a larger
        ``(count, id)`` (this one stops), else, once every other worker is done, all records by worker id (this one
        merges).

        A worker that exited is judged by a record read *after* its exit was seen: a worker publishes ``done``, then
        stops and exits within milliseconds, so a record read just before its exit can be stale (``done`` not yet
        there) though the worker finished.

        Raises:
            RuntimeError: A worker it waits for exited without finishing, or ``wait_seconds`` passed.
        """
        mine = (int(count), int(worker_id))
        deadline = time.monotonic() + wait_seconds
        parent = os.getppid()
        exited: dict[int, int] = {}
        """Workers (id → pid) seen exited before this round's reads: their records are final."""
        while True:
            records: dict[int, PassRecord] = {}
            for v in range(num_workers):
                if v == worker_id:
                    continue
                record = self.read(name, v)
                seen = 0 if record is None else record.count  # counts only grow, from 0
                if (seen, v) > mine:
                    return None
                if record is not None:
                    records[v] = record
            waiting = [v for v in range(num_workers) if v != worker_id and not (v in records and records[v].done)]
            if not waiting:
                return records
            unfinished = [v for v in waiting if v in exited]
            if unfinished:
                v = unfinished[0]
                raise RuntimeError(f"DataLoader worker {v} (pid {exited[v]}) exited before it finished its "
                                   f"epoch pass; worker {worker_id} cannot merge the tails (the pass was abandoned?).")
            exited = {v: records[v].pid for v in waiting if v in records and not _alive(records[v].pid)}
            if exited:
                continue  # read their final records before judging them
            if os.getppid() != parent:
                raise RuntimeError(f"DataLoader worker {worker_id}: the main process exited while it waited for the "
                                   "other workers' tails.")
            if time.monotonic() > deadline:
                raise RuntimeError(f"DataLoader worker {worker_id} waited {wait_seconds:.0f} s for workers {waiting} to "
                                   "finish their epoch pass to merge the tails; are they stuck decoding a sample "
                                   "(sample_timeout_seconds bounds that)?")
            time.sleep(_POLL_SECONDS)

    def end(self, name: str, merger_id: int) -> None:
        """Called by the merger once it has read every record: removes the others' records (they are done), keeps
        its own, the largest, which tells a worker still deciding to stop (left for the age rule of :meth:`begin`)."""
        directory = self.pass_dir(name)
        for entry in os.listdir(directory):
            if entry != f"w{merger_id}.json":
                try:
                    os.remove(os.path.join(directory, entry))
                except FileNotFoundError:
                    pass


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists and is not a zombie (an exited worker its parent has not reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def remove_abandoned(parent: str, *, min_age_seconds: float = MERGE_WAIT_SECONDS) -> list[str]:
    """Removes the boards in ``parent`` (``avalign-tails-{pid}-{random}[-ns{pid namespace}]``, this user's) whose
    process is gone and that nothing has touched for ``min_age_seconds``; returns their paths. A board's process
    removes it when it drops the dataset or exits, but not when it is killed (SIGKILL, the OOM killer, SIGTERM's
    default action) or leaves with ``os._exit``: a training job preempted and resumed 20 times left 20 directories
    in ``/dev/shm``. The age rule keeps a recently used board whose process this one cannot see. A board named with
    a pid namespace other than this process's (another container sharing ``/dev/shm``, ``docker --ipc=host``) is
    left alone whatever its age: its pid means nothing here, and a live run's board is idle for longer than the age
    whenever its main process pauses mid-epoch (a long evaluation): removed then, the done records and saved tails
    of the workers that had stopped were lost, and the merger raised after waiting :data:`MERGE_WAIT_SECONDS` for
    them (adv67). Names without a pid (``mkdtemp``'s, before soak66) are left alone; names without a namespace
    (before adv67) are judged by their pid."""
    removed: list[str] = []
    try:
        entries = os.listdir(parent)
    except OSError:
        return removed
    now = time.time()
    namespace = _pid_namespace()
    for entry in entries:
        pid_text, dash, token = entry[len(_PREFIX):].partition("-")
        token, _, ns_text = token.partition("-")
        if not (entry.startswith(_PREFIX) and pid_text.isdigit() and dash and token and "-" not in ns_text
                and (not ns_text or ns_text == f"ns{namespace}")):
            continue
        pid, path = int(pid_text), os.path.join(parent, entry)
        if pid == os.getpid() or _alive(pid):
            continue
        try:
            info = os.stat(path)
            if info.st_uid != os.getuid():
                continue
            newest = max([info.st_mtime] + [e.stat().st_mtime for e in os.scandir(path)])
        except OSError:
            continue
        if now - newest > min_age_seconds:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    if removed:
        logger.info("removed %d tail board(s) left in %s by processes that were killed", len(removed), parent)
    return removed


def _pid_namespace() -> Optional[int]:
    """This process's pid namespace (the inode of ``/proc/self/ns/pid``), or None where there is none to read."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def _remove_if_owner(root: str, owner_pid: int) -> None:
    if os.getpid() == owner_pid:
        shutil.rmtree(root, ignore_errors=True)
