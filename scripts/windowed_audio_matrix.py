"""Windowed ``read_audio`` against the whole read, per container x codec (BENCHMARKS.md, opus63 and mkv64).

Makes each file with the Debian ``ffmpeg`` CLI from one 40 s noise signal (seeded), reads it whole and in 0.5 s
windows (PyAV backend: starts past 2 s seek), and prints for each window the shift ``lag`` (samples) at which the
window's samples sit in the whole read relative to the index its ``start_seconds`` names (0: exact; negative: the
window stamps its samples late) and the largest sample difference there; for each file, where the generator's
samples land in the whole read (``whole-vs-generator lag``: 0 when the whole read starts at content time 0). Ends with
one line per file: the largest |lag|, the largest sample difference at the named index, windows whose start is off the
whole read's sample grid, and windows whose ``start_seconds`` is more than half a sample from the one asked for.

    PYTHONPATH=. python scripts/windowed_audio_matrix.py OUT_DIR [NAME,NAME,...]
"""
import json
import subprocess
import sys
import wave
from pathlib import Path
import numpy as np
from loaders import read_audio

DUR = 40.0
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/windowed_audio_matrix")
OUT.mkdir(parents=True, exist_ok=True)

FORMATS = {  # name: (ext, ffmpeg args, sample rate)
    "webm_opus": ("webm", ["-c:a", "libopus", "-b:a", "96k"], 48000),
    "mkv_opus": ("mkv", ["-c:a", "libopus", "-b:a", "96k"], 48000),
    "ogg_opus": ("ogg", ["-c:a", "libopus", "-b:a", "96k"], 48000),
    "mp4_aac": ("mp4", ["-c:a", "aac", "-b:a", "128k"], 48000),
    "mkv_aac": ("mkv", ["-c:a", "aac", "-b:a", "128k"], 48000),
    "ts_aac": ("ts", ["-c:a", "aac", "-b:a", "128k"], 48000),
    "m4a_alac": ("m4a", ["-c:a", "alac"], 48000),
    "mkv_flac": ("mkv", ["-c:a", "flac"], 48000),
    "flac": ("flac", ["-c:a", "flac"], 48000),
    "mp3": ("mp3", ["-c:a", "libmp3lame", "-b:a", "192k"], 48000),
    "mp3_44k": ("mp3", ["-c:a", "libmp3lame", "-b:a", "192k"], 44100),
    "ogg_vorbis": ("ogg", ["-c:a", "libvorbis", "-q:a", "5"], 48000),
    "mkv_vorbis": ("mkv", ["-c:a", "libvorbis", "-q:a", "5"], 48000),
    "wav_pcm": ("wav", ["-c:a", "pcm_s16le"], 48000),
    "mkv_pcm": ("mkv", ["-c:a", "pcm_s16le"], 48000),
    "mkv_mp3": ("mkv", ["-c:a", "libmp3lame", "-b:a", "192k"], 48000),
    "webm_opus_c700": ("webm", ["-c:a", "libopus", "-cluster_time_limit", "700"], 48000),
    "mkv_aac_c700": ("mkv", ["-c:a", "aac", "-cluster_time_limit", "700"], 48000),
    "mkv_mp3_c700": ("mkv", ["-c:a", "libmp3lame", "-cluster_time_limit", "700"], 48000),
    "mkv_vorbis_c700": ("mkv", ["-c:a", "libvorbis", "-cluster_time_limit", "700"], 48000),
    "webm_vp9_opus": ("webm", ["-c:a", "libopus"], 48000),  # made with video, see VIDEO
    "mkv_h264_aac": ("mkv", ["-c:a", "aac"], 48000),
    "mkv_aac_44k_c700": ("mkv", ["-c:a", "aac", "-cluster_time_limit", "700"], 44100),
    "mkv_mp3_44k_c700": ("mkv", ["-c:a", "libmp3lame", "-cluster_time_limit", "700"], 44100),
    "mkv_flac_44k_c700": ("mkv", ["-c:a", "flac", "-cluster_time_limit", "700"], 44100),
    "mkv_pcm_44k_c700": ("mkv", ["-c:a", "pcm_s16le", "-cluster_time_limit", "700"], 44100),
}
_MORE = {  # mkv64: more containers x codecs, each at 16, 22.05, 44.1 and 48 kHz (AC-3: 44.1 and 48 kHz only)
    "mkv_vorbis": ("mkv", ["-c:a", "libvorbis", "-q:a", "5"]),
    "mkv_vorbis_c700": ("mkv", ["-c:a", "libvorbis", "-cluster_time_limit", "700"]),
    "webm_vorbis": ("webm", ["-c:a", "libvorbis", "-q:a", "5"]),
    "mkv_pcm": ("mkv", ["-c:a", "pcm_s16le"]),
    "mkv_pcm_c700": ("mkv", ["-c:a", "pcm_s16le", "-cluster_time_limit", "700"]),
    "mkv_pcm24_c700": ("mkv", ["-c:a", "pcm_s24le", "-cluster_time_limit", "700"]),
    "mov_pcm": ("mov", ["-c:a", "pcm_s16le"]),
    "mp4_alac": ("mp4", ["-c:a", "alac"]),
    "avi_pcm": ("avi", ["-c:a", "pcm_s16le"]),
    "avi_mp3": ("avi", ["-c:a", "libmp3lame", "-b:a", "128k"]),
    "ogg_vorbis": ("ogg", ["-c:a", "libvorbis", "-q:a", "5"]),
    "ogg_flac": ("ogg", ["-c:a", "flac"]),
    "ts_ac3": ("ts", ["-c:a", "ac3"]),
    "ts_mp2": ("ts", ["-c:a", "mp2"]),
}
for _base, (_ext, _args) in _MORE.items():
    for _rate in (16000, 22050, 44100, 48000):
        if _base == "ts_ac3" and _rate < 32000:
            continue
        FORMATS[f"{_base}_{_rate / 1000:g}k".replace(".", "")] = (_ext, _args, _rate)
VIDEO = {"webm_vp9_opus": ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-g", "47"],
         "mkv_h264_aac": ["-c:v", "libx264", "-preset", "ultrafast", "-g", "47"]}
STARTS = [1.5, 3.0, 3.0005, 12.0104, 21.123457, 30.02, 33.2513]


def source_wav(rate):
    path = OUT / f"src{rate}.wav"
    if not path.exists():
        rng = np.random.default_rng(7)
        n = int(DUR * rate)
        x = rng.standard_normal(n) * 0.1
        x = np.convolve(x, np.ones(4) / 4, mode="same")  # a little lowpass: lossy codecs keep it
        with wave.open(str(path), "wb") as w:
            w.setnchannels(1); w.setsampwidth(2); w.setframerate(rate)
            w.writeframes((np.clip(x, -1, 1) * 32767).astype("<i2").tobytes())
    return path


def make(name):
    ext, args, rate = FORMATS[name]
    path = OUT / f"{name}.{ext}"
    if not path.exists():
        video = ["-f", "lavfi", "-i", f"testsrc=s=64x64:r=30:d={DUR}"] if name in VIDEO else []
        subprocess.run(["ffmpeg", "-v", "error", "-y", *video, "-i", str(source_wav(rate)), *VIDEO.get(name, []), *args,
                        *(["-shortest"] if video else []), str(path)], check=True)
    return path, rate


def lag(whole, win, at, search=2400):
    """Integer k so that win == whole[at+k : at+k+len(win)] best (least squares); max abs diff there."""
    n = len(win)
    lo, hi = max(at - search, 0), min(at + search, len(whole) - n)
    seg = whole[lo:hi + n]
    # normalized cross-correlation over candidate shifts
    c = np.correlate(seg, win, mode="valid")
    k = int(np.argmax(c)) + lo - at
    diff = float(np.max(np.abs(whole[at + k: at + k + n] - win)))
    return k, diff


def main():
    rows = []
    only = sys.argv[2].split(",") if len(sys.argv) > 2 else list(FORMATS)
    for name in only:
        path, rate = make(name)
        whole = read_audio(str(path), backend="pyav")
        w = whole.samples[0].numpy().astype(np.float64)
        src = read_audio(str(source_wav(rate)), backend="pyav").samples[0].numpy().astype(np.float64)
        # whole read vs generator: where does generator sample 96000 land (expected index = -whole.start*rate + 96000)
        g_at = int(round(-whole.start_seconds * rate)) + rate * 2
        gk, _ = lag(w, src[rate * 2: rate * 3], g_at)
        print(f"{name:12s} whole.start={whole.start_seconds:.7f} n={w.size} whole-vs-generator lag={gk:+d}", flush=True)
        for s in STARTS:
            win = read_audio(str(path), start_seconds=s, stop_seconds=s + 0.5, backend="pyav")
            x = win.samples[0].numpy().astype(np.float64)
            at_f = (win.start_seconds - whole.start_seconds) * rate
            at = int(round(at_f))
            k, diff = lag(w, x[4800:], at + 4800) if len(x) > 9600 else lag(w, x, at)
            rows.append(dict(fmt=name, start=s, win_start=win.start_seconds, frac=round(at_f - at, 6), lag=k,
                             maxdiff=diff, n=len(x)))
            print(f"{name:12s} start={s:<9} win.start={win.start_seconds:.7f} claim_idx={at_f:.3f} lag={k:+d} "
                  f"maxdiff={diff:.2e} n={len(x)}", flush=True)
    json.dump(rows, open(OUT / f"rows{len(only)}.json", "w"), indent=1)
    print("\nfile | max abs lag | max diff | off-grid starts | starts > 0.5 sample from asked")
    for name in only:
        mine = [r for r in rows if r["fmt"] == name and r["start"] > 2.0]  # the seeked windows
        rate = FORMATS[name][2]
        far = sum(abs(r["win_start"] - r["start"]) > 0.5 / rate + 1e-9 for r in mine)
        print(f"{name} | {max(abs(r['lag']) for r in mine)} | {max(r['maxdiff'] for r in mine):.1e} | "
              f"{sum(abs(r['frac']) > 1e-3 for r in mine)} | {far}")


if __name__ == "__main__":
    main()
