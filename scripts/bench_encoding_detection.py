"""How charset-normalizer names the encoding of short subtitle files (BENCHMARKS.md, "Transcripts that are not UTF-8").

Subtitle lines in 19 languages are encoded with the legacy code pages their users save in (cp1252 for Western
Europe, cp1251/KOI8-R, cp1250/ISO-8859-2, ISO-8859-7/cp1253, cp1254, cp1255, cp1256, Shift-JIS, EUC-JP, GBK, Big5,
EUC-KR) and wrapped as SRT of 1, 5 and 30 cues; 10 samples per cell (the lines rotated). For each file:

* ``detected``: ``charset_normalizer.from_bytes(data).best().encoding`` (the commonest answer of the cell is shown);
* ``right``: the share of samples whose text decoded with the detected encoding equals the text encoded;
* ``cp1252 ok``: the share whose cp1252 decoding equals the text (a cp1252 fallback would be right);
* ``avalign``: what ``loaders.decode_text`` does with it (``read``: the text, right; ``refused``; ``WRONG``: mojibake).

Then the same for held-out lines (``HELD_OUT``), 1 and 5 cues.

Usage (from a checkout; ``PYTHONPATH`` chooses the code measured)::

    OMP_NUM_THREADS=1 PYTHONPATH=. python scripts/bench_encoding_detection.py
"""
from __future__ import annotations

import collections
import logging
import sys
import time

import charset_normalizer

LINES = {
    "French": ["Je ne sais pas où il est allé.", "C'est déjà l'été, on va à la plage ?", "Très bien, merci beaucoup.",
               "Où est la gare, s'il vous plaît ?", "Il a reçu une lettre de sa sœur.", "Nous sommes arrivés à Noël.",
               "Ça ne me dérange pas du tout.", "Elle préfère le café crème.", "Attends, je reviens tout de suite.",
               "Qu'est-ce que tu fais là ?"],
    "German": ["Wir müssen jetzt gehen.", "Das ist schön, danke schön.", "Ich weiß nicht, was er möchte.",
               "Die Straße ist für Fußgänger gesperrt.", "Können Sie mir bitte helfen?", "Er hat die Tür geöffnet.",
               "Grüße aus München!", "Es tut mir leid, ich bin spät dran.", "Hören Sie gut zu.",
               "Über den Fluss führt eine Brücke."],
    "Spanish": ["¿Dónde está la estación?", "¡Qué sorpresa verte aquí!", "El niño está en la habitación.",
                "Mañana vamos a la montaña.", "No sé qué decir.", "La canción es muy bonita.", "Él también quiere venir.",
                "Gracias por tu atención.", "Estoy cansado, pero feliz.", "¿Cuántos años tienes?"],
    "Portuguese": ["Não sei o que aconteceu.", "A situação é muito difícil.", "Você quer um café?",
                   "Obrigado pela informação.", "Ele está em São Paulo.", "As crianças brincam no jardim.",
                   "Amanhã é sábado.", "Isso não é possível.", "Vamos à praia depois do almoço.",
                   "Ela é médica no hospital."],
    "Italian": ["Perché non vieni con noi?", "È già tardi, andiamo.", "La città è molto bella.", "Non ho capito niente.",
                "Più tardi ti chiamo.", "Così è la vita.", "Cosa vuoi mangiare stasera?", "Lui è andato in università.",
                "Grazie, sei molto gentile.", "Però non è colpa mia."],
    "Dutch": ["Ik weet het niet precies.", "Hij is geïnteresseerd in kunst.", "Dat is één goed idee.",
              "Wij hebben geen tijd.", "Zij zegt: tot ziens!", "Het café is op de hoek.", "Hoe gaat het met je?",
              "Twee ideeën, één oplossing.", "Het regent vandaag.", "Ik heb een paar vragen."],
    "Swedish": ["Jag förstår inte vad du säger.", "Vi ses i morgon på stationen.", "Det är många år sedan.",
                "Hon är här nu.", "Får jag fråga en sak?", "Vädret är fint idag.", "Kan du öppna dörren?",
                "Han bor i Göteborg.", "Vi måste äta nu.", "Tack så mycket för hjälpen."],
    "Danish": ["Jeg forstår ikke hvad du siger.", "Hun bor i København.", "Vi ses på søndag.",
               "Det er dårligt vejr i dag.", "Kan du høre mig?", "Jeg har købt en bil.", "Hvor er stationen?",
               "Han går til skolen.", "Tak for maden.", "Blåbærsyltetøj på brødet."],
    "English": ["“Don’t go,” she said.", "It’s fine… really.", "I’ve got to go — now.", "He ordered a café latte.",
                "We’ll see.", "Wait for me!", "That’s not what I meant.", "Where are you going?",
                "I don’t know – maybe.", "See you tomorrow."],
    "Russian": ["Привет, как дела?", "Я не знаю, где он.", "Это очень хорошая идея.", "Мы пойдём домой завтра.",
                "Спасибо большое!", "Что ты здесь делаешь?", "Подожди меня, пожалуйста.", "Он живёт в Москве.",
                "Сегодня холодно.", "Я тебя люблю."],
    "Greek": ["Γειά σου, τι κάνεις;", "Δεν ξέρω πού είναι.", "Ευχαριστώ πολύ.", "Αυτό είναι πολύ καλό.",
              "Θα πάμε σπίτι αύριο.", "Τι κάνεις εδώ;", "Περίμενε με, σε παρακαλώ.", "Μένει στην Αθήνα.",
              "Σήμερα κάνει κρύο.", "Σ' αγαπώ."],
    "Polish": ["Nie wiem, gdzie on jest.", "Dziękuję bardzo!", "Zażółć gęślą jaźń.", "Idziemy jutro do domu.",
               "Co tutaj robisz?", "Poczekaj na mnie, proszę.", "Mieszka w Łodzi.", "Dzisiaj jest zimno.",
               "Kocham cię.", "To bardzo dobry pomysł."],
    "Czech": ["Nevím, kde je.", "Děkuji mnohokrát!", "Příliš žluťoučký kůň úpěl ďábelské ódy.", "Zítra půjdeme domů.",
              "Co tady děláš?", "Počkej na mě, prosím.", "Bydlí v Brně.", "Dnes je zima.", "Miluji tě.",
              "To je velmi dobrý nápad."],
    "Hungarian": ["Nem tudom, hol van.", "Köszönöm szépen!", "Holnap hazamegyünk.", "Mit csinálsz itt?",
                  "Várj meg, kérlek.", "Budapesten él.", "Ma hideg van.", "Szeretlek.", "Ez nagyon jó ötlet.",
                  "Árvíztűrő tükörfúrógép."],
    "Turkish": ["Nasılsın?", "Bilmiyorum, nerede o.", "Çok teşekkür ederim!", "Yarın eve gideceğiz.",
                "Burada ne yapıyorsun?", "Lütfen beni bekle.", "İstanbul'da yaşıyor.", "Bugün hava soğuk.",
                "Seni seviyorum.", "Bu çok iyi bir fikir."],
    "Hebrew": ["שלום, מה שלומך?", "אני לא יודע איפה הוא.", "תודה רבה!", "נלך הביתה מחר.", "מה אתה עושה כאן?",
               "חכה לי, בבקשה.", "הוא גר בירושלים.", "היום קר.", "אני אוהב אותך.", "זה רעיון טוב מאוד."],
    "Arabic": ["مرحبا، كيف حالك؟", "لا أعرف أين هو.", "شكرا جزيلا!", "سنذهب إلى البيت غدا.", "ماذا تفعل هنا؟",
               "انتظرني من فضلك.", "يعيش في القاهرة.", "الجو بارد اليوم.", "أحبك.", "هذه فكرة جيدة جدا."],
    "Japanese": ["こんにちは、元気ですか？", "どこにいるのか分かりません。", "ありがとうございます。", "明日、家に帰ります。",
                 "ここで何をしているの？", "ちょっと待ってください。", "東京に住んでいます。", "今日は寒いですね。",
                 "字幕テスト", "とても良い考えです。"],
    "Chinese (simpl.)": ["你好，你好吗？", "我不知道他在哪里。", "非常感谢！", "我们明天回家。", "你在这里做什么？",
                         "请等我一下。", "他住在北京。", "今天很冷。", "我爱你。", "这是个好主意。"],
    "Chinese (trad.)": ["你好，你好嗎？", "我不知道他在哪裡。", "非常感謝！", "我們明天回家。", "你在這裡做什麼？",
                        "請等我一下。", "他住在台北。", "今天很冷。", "我愛你。", "這是個好主意。"],
    "Korean": ["안녕하세요, 잘 지내세요?", "그가 어디 있는지 모르겠어요.", "정말 감사합니다!", "내일 집에 갈 거예요.",
               "여기서 뭐 해요?", "잠깐만 기다려 주세요.", "그는 서울에 살아요.", "오늘은 추워요.", "사랑해요.",
               "좋은 생각이에요."],
}
WESTERN = ("French", "German", "Spanish", "Portuguese", "Italian", "Dutch", "Swedish", "Danish", "English")
ENCODINGS = {**{lang: ["cp1252"] for lang in WESTERN}, "Russian": ["cp1251", "koi8_r"],
             "Greek": ["iso8859_7", "cp1253"], "Polish": ["cp1250", "iso8859_2"], "Czech": ["cp1250"],
             "Hungarian": ["cp1250"], "Turkish": ["cp1254"], "Hebrew": ["cp1255"], "Arabic": ["cp1256"],
             "Japanese": ["shift_jis", "euc_jp"], "Chinese (simpl.)": ["gbk"], "Chinese (trad.)": ["big5"],
             "Korean": ["euc_kr"]}
HELD_OUT = {  # written after the rule, to check it on lines it was not tuned on
 ("French", "cp1252"): ["Le garçon a mangé une pêche.", "Où êtes-vous allés hier soir ?", "C’est un problème très sérieux.", "Il fait beau aujourd’hui, n’est-ce pas ?", "Ma sœur aînée habite à Genève.", "Voilà, c’est fini.", "Je t’ai déjà dit non !", "Ils se sont mariés en août."],
 ("German", "cp1252"): ["Das Mädchen läuft über die Straße.", "Wie spät ist es?", "Ich hätte gern ein Glas Wasser.", "Fünf Minuten noch!", "Er wohnt in Köln.", "Die Bücher gehören mir.", "Schließ bitte die Tür.", "Gute Nacht, schlaf schön."],
 ("Spanish", "cp1252"): ["¿Por qué no me llamaste?", "Mi corazón está contigo.", "¡Vámonos ya!", "Señor, su café está listo.", "Llegó el miércoles por la mañana.", "No entendí la pregunta.", "Él es más alto que tú.", "Pásame la sal, por favor."],
 ("Portuguese", "cp1252"): ["Você já comeu?", "Não há problema nenhum.", "As lições de hoje são fáceis.", "Ele põe o livro na mesa.", "Três irmãs moram em Lisboa.", "Está tudo bem, mãe.", "É a vez dele.", "Ontem choveu à tarde."],
 ("Italian", "cp1252"): ["Sì, lo so già.", "Lunedì vado a Milano.", "Perché non mi hai chiamato?", "È una città bellissima.", "Non posso più aspettare.", "Ciò che dici è vero.", "Ho mangiato troppo caffè.", "Vieni giù, presto!"],
 ("Dutch", "cp1252"): ["Hij heeft een café geopend.", "Dat is heel belangrijk.", "Wij zijn één familie.", "Ze is geïnteresseerd.", "Ik ga naar huis.", "Zullen we gaan?", "Het is koud buiten.", "Tot morgen!"],
 ("Swedish", "cp1252"): ["Öppna fönstret, tack.", "Det är kallt ute.", "Vart går du?", "Hon läser en bok.", "Vi åker till Malmö.", "Jag är trött.", "Älskar du mig?", "Så klart!"],
 ("Polish", "cp1250"): ["Jak się masz?", "Gdzie jest łazienka?", "Przepraszam, nie rozumiem.", "Mój brat mieszka w Gdańsku.", "Chodź tutaj!", "Ile to kosztuje?", "Wszystko będzie dobrze.", "Jestem zmęczony."],
 ("Czech", "cp1250"): ["Jak se máš?", "Kde je nádraží?", "Promiňte, nerozumím.", "Můj bratr bydlí v Praze.", "Pojď sem!", "Kolik to stojí?", "Všechno bude v pořádku.", "Jsem unavený."],
 ("Turkish", "cp1254"): ["Nasıl gidiyor?", "Tuvalet nerede?", "Özür dilerim, anlamıyorum.", "Kardeşim Ankara'da yaşıyor.", "Buraya gel!", "Bu ne kadar?", "Her şey yoluna girecek.", "Çok yorgunum."],
 ("Hungarian", "cp1250"): ["Hogy vagy?", "Hol van a mosdó?", "Bocsánat, nem értem.", "A bátyám Debrecenben él.", "Gyere ide!", "Mennyibe kerül?", "Minden rendben lesz.", "Nagyon fáradt vagyok, elnézést kérek tőled."],
}
CUES = (1, 5, 30)
SAMPLES = 10


def srt(lines: list[str]) -> str:
    return "".join(f"{i + 1}\n00:00:{i:02d},000 --> 00:00:{i:02d},900\n{line}\n\n" for i, line in enumerate(lines))


def samples(lang: str, cues: int) -> list[str]:
    lines = LINES[lang]
    return [srt([lines[(start + k) % len(lines)] for k in range(cues)]) for start in range(SAMPLES)]


def main() -> None:
    logging.disable(logging.CRITICAL)
    try:
        from loaders import TranscriptError
        from loaders.transcripts import decode_text
    except ImportError:  # measuring the detector only
        decode_text = None
    print("| language | encoding | cues (bytes) | detected (commonest) | right | cp1252 ok | avalign |")
    print("|---|---|---|---|---|---|---|")
    seconds = []
    for lang, encodings in ENCODINGS.items():
        for encoding in encodings:
            for cues in CUES:
                found, right, cp_ok, outcome, size = collections.Counter(), 0, 0, collections.Counter(), 0
                for text in samples(lang, cues):
                    data = text.encode(encoding)
                    size += len(data)
                    started = time.perf_counter()
                    best = charset_normalizer.from_bytes(data).best()
                    seconds.append(time.perf_counter() - started)
                    name = best.encoding if best is not None else "none"
                    found[name] += 1
                    right += best is not None and data.decode(best.encoding, errors="replace") == text
                    cp_ok += data.decode("cp1252", errors="replace") == text
                    if decode_text is not None:
                        try:
                            outcome["read" if decode_text(data, "x.srt") == text else "WRONG"] += 1
                        except TranscriptError:
                            outcome["refused"] += 1
                names = ", ".join(f"{n} {c}" if c < SAMPLES else n for n, c in found.most_common(2))
                verdict = ", ".join(f"{k} {v}" for k, v in outcome.most_common()) or "-"
                print(f"| {lang} | {encoding} | {cues} ({size // SAMPLES}) | {names} | {right}/{SAMPLES} | "
                      f"{cp_ok}/{SAMPLES} | {verdict} |", flush=True)
    if decode_text is not None:
        print("\nHeld out (avalign on lines the rule was not written from):\n")
        print("| language | encoding | cues | avalign |\n|---|---|---|---|")
        for (lang, encoding), lines in HELD_OUT.items():
            for cues in (1, 5):
                outcome = collections.Counter()
                for start in range(len(lines)):
                    text = srt([lines[(start + k) % len(lines)] for k in range(cues)])
                    try:
                        outcome["read" if decode_text(text.encode(encoding), "x.srt") == text else "WRONG"] += 1
                    except TranscriptError:
                        outcome["refused"] += 1
                print(f"| {lang} | {encoding} | {cues} | {', '.join(f'{k} {v}' for k, v in outcome.most_common())} |")
    seconds.sort()
    print(f"\ndetection time per file: median {seconds[len(seconds) // 2] * 1000:.1f} ms, "
          f"max {seconds[-1] * 1000:.1f} ms (charset-normalizer {charset_normalizer.__version__}, {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
