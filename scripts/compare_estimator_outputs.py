"""Compare the estimators' outputs of two checkouts of avalign (a refactor must not change a single value).

Usage::

    git archive BASE_COMMIT | (mkdir -p /tmp/base && tar -x -C /tmp/base)
    python scripts/compare_estimator_outputs.py /tmp/base .

Each checkout runs in its own interpreter on the same inputs: the synthetic A/V clips of
``tests/test_estimate.py`` (offsets, drifts, VFR, short clips, abstentions) through ``estimate_av_offset``, and
the synthetic speech of ``tests/test_text_offset.py`` (word transcripts and caption-only transcripts, three
injected offsets, six seeds) through the energy transcript estimator. Every field of every estimate is
compared exactly; the script prints the number of estimates and of differing ones, and exits 1 on a difference.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, sys
root = sys.argv[1]
sys.path[:0] = [root, root + "/tests"]
from test_estimate import make_clip
from test_text_offset import make_speech
from loaders import Span, Transcript
from aligner import estimate_av_offset
try:
    from aligner.estimators import estimate_text_offset
except ImportError:  # before issue #15 the energy estimator was a top-level export
    from aligner import estimate_text_offset

out = []
av_cases = [(40.0, 0.0, False, 20.0), (-80.0, 1000.0, True, 20.0), (123.4, -700.0, False, 30.0), (-300.0, 300.0, True, 12.0),
            (5.0, 0.0, False, 3.0), (450.0, 0.0, False, 8.0), (-20.0, -1200.0, True, 25.0), (0.0, 500.0, False, 2.0)]
clips = [dict(av_offset_ms=o, drift_ppm=d, vfr=v, seed=s, duration_seconds=t) for s, (o, d, v, t) in enumerate(av_cases)]
clips += [dict(av_offset_ms=30.0, seed=40, beeps=False), dict(av_offset_ms=30.0, seed=41, flashes=False)]
for case in clips:
    video, audio, _ = make_clip(**case)
    e = estimate_av_offset(video, audio)
    record = {k: v for k, v in e.__dict__.items() if k != "abstain"}
    record["abstain"] = e.abstain.to_json() if e.abstain else None
    out.append(record)
for seed in range(6):
    for offset_ms in (0.0, 120.0, -200.0):
        audio, transcript, _ = make_speech(seed=seed, text_offset_ms=offset_ms)
        captions = Transcript(tuple(Span(s.text, s.start_seconds, s.stop_seconds) for s in transcript.spans))
        for t in (transcript, captions):
            e = estimate_text_offset(audio, t)
            out.append([e.text_offset_ms, e.confidence, e.method, e.peak_to_sidelobe, e.best_guess_ms, e.found])
print(json.dumps(out, sort_keys=True))
"""


def _outputs(root: Path) -> list:
    proc = subprocess.run([sys.executable, "-c", _CHILD, str(root)], capture_output=True, text=True, check=True,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    before, after = (_outputs(Path(p).resolve()) for p in sys.argv[1:3])
    differing = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
    print(f"{len(before)} estimates compared, {len(differing) + abs(len(before) - len(after))} differ: {differing}")
    return 1 if differing or len(before) != len(after) else 0


if __name__ == "__main__":
    raise SystemExit(main())
