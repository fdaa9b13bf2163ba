"""Transcripts that are not UTF-8 (round 39, adversarial): only Western European text falls back to cp1252; other
encodings and broken UTF-8 are refused with a hint that names what the bytes are; UTF-32 with a BOM is read.

Oracle: the bytes each test encodes itself with Python's codecs, and the text it encoded.
"""
from __future__ import annotations

import codecs
import json
import logging
import re

import pytest

import loaders
from loaders import TranscriptError
from loaders.transcripts import decode_text


def _srt(*lines: str) -> str:
    return "".join(f"{i + 1}\n00:00:{i:02d},000 --> 00:00:{i:02d},900\n{line}\n\n" for i, line in enumerate(lines))


WESTERN = {  # cp1252, as "ANSI" subtitle editors save them
    "French": ("Où êtes-vous allés hier soir ?", "Ma sœur aînée habite à Genève.", "C’est un problème très sérieux."),
    "German": ("Das Mädchen läuft über die Straße.", "Die Bücher gehören mir.", "Gute Nacht, schlaf schön."),
    "Spanish": ("¿Por qué no me llamaste?", "Señor, su café está listo.", "¡Vámonos ya!"),
    "Portuguese": ("As lições de hoje são fáceis.", "Três irmãs moram em Lisboa.", "Você já comeu?"),
    "Italian": ("Lunedì vado a Milano.", "È una città bellissima.", "Non posso più aspettare."),
    "Dutch": ("Wij zijn één familie.", "Ze is geïnteresseerd.", "Hij heeft een café geopend."),
    "Danish": ("Hun bor i København.", "Kan du høre mig?", "Blåbærsyltetøj på brødet."),
    "Swedish": ("Öppna fönstret, tack.", "Vi åker till Malmö.", "Älskar du mig?"),
}
OTHERS = [  # (language, encoding, lines, the script the hint must name: None where the guess is not reliable)
    ("Russian", "cp1251", ("Привет, как дела?", "Я не знаю, где он.", "Это очень хорошая идея.", "Спасибо большое!",
                           "Что ты здесь делаешь?"), "(Cyrillic)"),
    ("Russian", "koi8_r", ("Привет, как дела?", "Я не знаю, где он.", "Это очень хорошая идея.", "Спасибо большое!",
                           "Что ты здесь делаешь?"), None),
    ("Greek", "iso8859_7", ("Γειά σου, τι κάνεις;", "Δεν ξέρω πού είναι.", "Ευχαριστώ πολύ."), None),
    ("Polish", "cp1250", ("Zażółć gęślą jaźń.", "Dziękuję bardzo!", "Mieszka w Łodzi.", "Kocham cię."), None),
    ("Polish", "iso8859_2", ("Zażółć gęślą jaźń.", "Dziękuję bardzo!", "Mieszka w Łodzi.", "Kocham cię."), None),
    ("Czech", "cp1250", ("Příliš žluťoučký kůň úpěl ďábelské ódy.", "Děkuji mnohokrát!", "Bydlí v Brně."), None),
    ("Turkish", "cp1254", ("Nasılsın?", "Çok teşekkür ederim!", "İstanbul'da yaşıyor.", "Bugün hava soğuk."), None),
    ("Japanese", "shift_jis", ("字幕テスト", "ありがとうございます。"), "(Japanese)"),
    ("Chinese", "gbk", ("我不知道他在哪里。", "这是个好主意。", "我们明天回家。", "你在这里做什么？"), "(Chinese, simplified)"),
    ("Chinese", "big5", ("我不知道他在哪裡。", "這是個好主意。"), "(Chinese, traditional)"),
    ("Korean", "euc_kr", ("안녕하세요, 잘 지내세요?", "정말 감사합니다!"), "(Korean)"),
]


def test_only_western_european_text_falls_back_to_cp1252(caplog):
    """Before: every byte string that was not UTF-8 and held no well-formed UTF-8 sequence was read as cp1252:
    Russian cp1251 became "Ïðèâåò", Shift-JIS "字幕テスト" became "Žš–‹ƒeƒXƒg" (a warning only), and the CJK files
    that happened to hold a UTF-8-looking byte pair were refused as "UTF-8 with broken bytes". Now Western text
    still loads (with the warning); the others are refused, naming the detected encoding, never garbled."""
    for language, lines in WESTERN.items():
        text = _srt(*lines)
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="loaders"):
            transcript = loaders.read_transcript(text.encode("cp1252"), name=f"{language}.srt")
        assert [s.text for s in transcript.spans] == list(lines), language
        assert any("read as cp1252" in r.getMessage() for r in caplog.records), language
    for language, encoding, lines, script in OTHERS:
        data = _srt(*lines).encode(encoding)
        assert data.decode("cp1252", errors="replace") != _srt(*lines)  # cp1252 would garble it: the case at stake
        with pytest.raises(TranscriptError) as raised:
            loaders.read_transcript(data, name=f"{language}.srt")
        message = str(raised.value)
        assert f"{language}.srt: byte {data.index(next(b for b in data if b > 127).to_bytes(1, 'big'))}" in message
        assert "not UTF-8 nor Western European text: it may be " in message, (language, encoding, message)
        assert "re-save the transcript as UTF-8" in message and "holds valid UTF-8 too" not in message
        if script is not None:
            first_guess = re.search(r"it may be (\S+ \([^)]*\))", message)
            assert first_guess is not None and first_guess.group(1).endswith(script), (encoding, message)


def test_cp1251_hint_names_the_encoding_and_an_iconv_command():
    data = _srt("Привет, как дела?", "Я не знаю, где он.", "Это очень хорошая идея.").encode("cp1251")
    with pytest.raises(TranscriptError, match=r"it may be cp1251 \(Cyrillic\).*iconv -f CP1251 -t UTF-8.*"
                                              r"not read as cp1252, which would garble it \('.*Ïðèâåò"):
        decode_text(data, "ru.srt")


def test_broken_utf8_is_refused_with_its_offsets():
    """Before: a lone UTF-8 lead byte in an otherwise ASCII file (what whisper.cpp writes when it splits a
    character, its issues #438/#3760) was read as cp1252 ("CafÃ au lait"), and whisper.cpp -ojf JSON whose
    tokens split a character (#1798) was told to "re-save as UTF-8". Now both are refused as UTF-8 with N broken
    bytes at the offsets the test put them, and the whisper.cpp one names its bug and the -oj way round it."""
    lone = b"1\n00:00:00,500 --> 00:00:01,500\nCaf\xc3 au lait\n"
    with pytest.raises(TranscriptError) as raised:
        loaders.read_transcript(lone, name="t.srt")
    at = lone.index(b"\xc3")
    assert str(raised.value).startswith(f"t.srt: byte {at}: cannot decode as utf-8")
    assert f"it is UTF-8 with 1 broken byte (at byte {at}; 0 bytes of whole characters)" in str(raised.value)

    zh = "你好".encode()
    doc = {"transcription": [{"offsets": {"from": 500, "to": 1500}, "text": " 你好", "tokens": [
        {"text": "@A@", "offsets": {"from": 500, "to": 800}, "p": 0.9},
        {"text": "@B@", "offsets": {"from": 800, "to": 1000}, "p": 0.9},
        {"text": "@C@", "offsets": {"from": 1000, "to": 1500}, "p": 0.9}]}]}
    raw = json.dumps(doc, ensure_ascii=False).encode()
    raw = raw.replace(b"@A@", zh[:2]).replace(b"@B@", zh[2:4]).replace(b"@C@", zh[4:])
    first = raw.index(b'"text": "', raw.index(b'"tokens"')) + len(b'"text": "')
    bad = [first, first + 1, raw.index(zh[2:4] + b'"'), raw.index(zh[2:4] + b'"') + 1]
    with pytest.raises(TranscriptError) as raised:
        loaders.read_transcript(raw, name="cpp.json")
    message = str(raised.value)
    assert f"it is UTF-8 with 6 broken bytes (at bytes {', '.join(map(str, bad))}, " in message, message
    assert "(6 bytes of whole characters" not in message and "6 bytes of whole characters)" in message
    assert "whisper.cpp" in message and "-ojf" in message and "-oj and without -ojf" in message


@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_with_a_bom_is_read(encoding):
    """Before: "no SRT cues found" (the UTF-32 BOM starts like UTF-16's, and UTF-16 decoding gave NUL-laced text)."""
    text = _srt("Café crème", "Привет")
    bom = {"utf-32": b"", "utf-32-le": codecs.BOM_UTF32_LE, "utf-32-be": codecs.BOM_UTF32_BE}[encoding]
    data = bom + text.encode(encoding)
    assert data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE))
    assert [s.text for s in loaders.read_transcript(data, name="u.srt").spans] == ["Café crème", "Привет"]
    assert decode_text(data, "u.srt") == text


def test_metadata_json_in_another_legacy_encoding_stays_metadata():
    """A video2dataset ``KEY.json`` record (url, caption, status) written in cp1251: decode_text refuses its text, but
    its structure is metadata, not a transcript; it was taken for a malformed transcript and its sample skipped. A
    cp1251 record holding a transcript's ``segments`` is still a transcript (then refused by the reader, naming the
    encoding)."""
    import json

    from loaders.transcripts import is_transcript_json

    record = {"url": "http://x/v.mp4", "caption": "Привет, как дела у всех сегодня", "status": "success"}
    data = json.dumps(record, ensure_ascii=False).encode("cp1251")
    assert not is_transcript_json(data)
    segments = {"segments": [{"text": "Привет всем", "start": 0.0, "end": 1.0}]}
    assert is_transcript_json(json.dumps(segments, ensure_ascii=False).encode("cp1251"))
    assert is_transcript_json(b'{"segments": [')  # malformed JSON: the reader reports it with its line


def test_too_many_cues_or_words_names_the_option_to_raise():
    """The exact counts after the parse (a JSON passes the pre-parse bound of max_cues + max_words objects) are refused
    with the option to raise, as the pre-parse bounds already were."""
    import loaders

    doc = json.dumps({"segments": [{"text": f"word{i} more", "start": i, "end": i + 0.5} for i in range(5)]}).encode()
    with pytest.raises(loaders.TranscriptError, match="5 cues, over max_cues=3; hint: .*raise read_transcript's max_cues"):
        loaders.read_transcript(doc, name="a.json", max_cues=3)
    with pytest.raises(loaders.TranscriptError, match="over max_words=4; hint: .*raise read_transcript's max_words"):
        loaders.read_transcript(doc, name="a.json", max_words=4)
