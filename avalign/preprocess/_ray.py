"""The Ray backend: one Ray task per output shard, on a cluster (``ray_address``) or a local instance.

Each task writes its shard straight into ``output_dir`` (which must be a path every Ray node can
write: a local directory for a local instance, a shared file system on a cluster) and returns its
state entry; the driver records entries as they arrive, exactly as the local backend does, so the
output is byte-identical to a local run.
"""
from __future__ import annotations

import logging
from typing import Callable, Optional, Sequence

from avalign.preprocess._shard import ShardTask, process_shard

logger = logging.getLogger(__name__)

__all__ = ["run_shards_ray"]


def run_shards_ray(
    tasks: Sequence[ShardTask],
    *,
    on_result: Callable[[dict], None],
    ray_address: Optional[str],
    workers: int,
    **shard_kwargs,
) -> None:
    """Run ``process_shard`` for every task on Ray; ``on_result(entry)`` in the driver as each finishes.

    Raises:
        ImportError: ray is not installed (hint: ``pip install 'avalign[ray]'``).
        SampleError: with ``on_error="raise"``, the first failing sample (other tasks are cancelled).
    """
    try:
        import ray
    except ImportError as e:
        raise ImportError("backend='ray' needs ray; hint: pip install 'avalign[ray]' (or use backend='local')") from e

    started_here = not ray.is_initialized()
    if started_here:
        if ray_address:
            ray.init(address=ray_address, log_to_driver=False)
        else:
            ray.init(num_cpus=workers, include_dashboard=False, log_to_driver=False)
    try:
        remote = ray.remote(num_cpus=1, max_retries=1)(process_shard)
        pending = [remote.remote(task, **shard_kwargs) for task in tasks]
        try:
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                for ref in done:
                    try:
                        on_result(ray.get(ref))
                    except ray.exceptions.RayTaskError as e:
                        # The task's own exception, as the local backend raises it (adv66: Ray's dual instance has
                        # the worker's traceback, colour codes included, as its message: what --json printed).
                        logger.debug("the Ray task failed: %s", e)  # (the worker's traceback)
                        cause = getattr(e, "cause", None)
                        if not isinstance(cause, Exception) or isinstance(cause, ray.exceptions.RayError):
                            cause = e.as_instanceof_cause()
                        raise cause from None
        except BaseException:
            for ref in pending:
                ray.cancel(ref, force=True)
            raise
    finally:
        if started_here:
            ray.shutdown()
