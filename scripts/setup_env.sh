#!/usr/bin/env bash
# Creates or refreshes .venv from requirements.lock; called by `make demo` and `make test`.
# A stamp keyed on the lock file and setup.cfg makes a second run cost about a second.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3.11}
VENV=.venv
KEY=$(cat requirements.lock setup.cfg | sha256sum | cut -c1-16)
STAMP="$VENV/.avalign-stamp-$KEY"

# Debian tools the pipeline and the sample-data generator use: ffmpeg/ffprobe (oracle, torchcodec's
# shared libraries), espeak-ng (speech with known word times), sox, chromium (headless report rendering).
need=()
command -v ffmpeg >/dev/null || need+=(ffmpeg)
command -v ffprobe >/dev/null || need+=(ffmpeg)
command -v espeak-ng >/dev/null || need+=(espeak-ng)
command -v sox >/dev/null || need+=(sox)
command -v chromium >/dev/null || need+=(chromium)   # renders the report page in a test
ldconfig -p 2>/dev/null | grep -q libespeak-ng.so.1 || need+=(libespeak-ng1)
if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing Debian packages: ${need[*]}"
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    sudo apt-get update -qq && sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
fi

if [ -f "$STAMP" ] && "$VENV/bin/python" -c "import avalign" 2>/dev/null; then
  exit 0
fi

echo "setup: creating $VENV from requirements.lock (first run downloads PyTorch, ~7 GB, a few minutes)"
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
PIP="$VENV/bin/pip --disable-pip-version-check -q"
$PIP install --upgrade pip wheel setuptools
# torch + torchvision first, then torchaudio with torch held: the order known to resolve on these machines.
$PIP install -c requirements.lock torch torchvision
$PIP install -c requirements.lock torch torchaudio
$PIP install -r requirements.lock
$PIP install --no-deps -e .
rm -f "$VENV"/.avalign-stamp-*
touch "$STAMP"
echo "setup: $VENV ready"
