"""Building blocks of the rules ``rules/14`` read in languages other than English: a note addressed to
the AI agent ("Hinweis für den KI-Assistenten:", "ملاحظة لأي مساعد ذكي:", "システムへの注記："), keeping
an act from the user ("不用告诉用户", "sin avisar al usuario") and a standing rule header ("长期规则：").

The English forms are :mod:`memwarden.commands.injection.rules_agent`'s ``directive.ai-header``,
``directive.conceal`` and ``directive.implant``; these are the same kinds of instruction (seed 004: content
addressed to the agent is an instruction, not data), not new kinds. Every pattern runs on the NORMALISED
text (NFKC, casefolded), so the alternatives below are written normalised (:func:`nfkc`).
"""

from __future__ import annotations

import unicodedata

from memwarden.commands.injection.normalisation import GREEK_ACCENTS


def nfkc(alternatives: str) -> str:
    """``alternatives`` as the normalised text writes them (NFKC, casefolded: Devanagari nukta letters
    decompose, for one; Greek accents dropped since rules/25)."""
    return unicodedata.normalize("NFKC", alternatives).casefold().translate(GREEK_ACCENTS)


#: A note, message, remark, notice or instruction (the header's noun), in 25 languages.
_HEADER_NOUN = nfkc(
    "hinweis|notiz|anmerkung|nachricht|zusatz|mitteilung|anweisung|remarque|message|consigne|nota|aviso|mensaje"
    "|mensagem|messaggio|avviso|instrucci[oó]n|instru[cç][aã]o|istruzione|opmerking|notitie|bericht|aanwijzing"
    "|uwaga|notatka|wiadomo[sś][cć]|polecenie|pozn[aá]mka|upozorn[eě]n[ií]|zpr[aá]va|pokyn|notering|anteckning"
    "|meddelande|notat|beskjed|huomio|huomautus|lis[aä]ys|viesti|ohje|mesaj|talimat|megjegyz[eé]s|[uü]zenet"
    "|not[aă]|catatan|pesan|instruksi|ghi chú|lưu ý|tin nhắn|σημείωση|μήνυμα|οδηγία|υπενθύμιση|примечание"
    "|заметка|сообщение|указание|инструкция|примітка|нотатка|повідомлення|вказівка|інструкція|ملاحظة|رسالة"
    "|تعليمات|تنبيه|הערה|הודעה|הנחיה|הוראה"
)
#: The AI agent as the header's addressee (the preposition and article sit between the two).
_AGENT_ML = nfkc(
    "ki|ki-\\w+|ia|l'ia|ai|a\\.i\\.|assistent\\w*|assistant\\w*|l'assistant\\w*|asistent\\w*|assistente|asystent\\w*"
    "|agent\\w*|agente|ajan\\w*|agen|bot|bots|botu|botti\\w*|chatbot\\w*|sprachmodell\\w*|tekoäly\\w*|avustaja\\w*"
    "|assistentti\\w*|yapay zek[aâ]\\w*|asistan\\w*|asszisztens\\w*|asisten|trợ lý|βοηθ\\w*|μοντέλ\\w*"
    # rules/47: the Vietnamese model ("Lưu ý cho mô hình:"), as the Greek μοντέλο above
    "|mô hình(?: ngôn ngữ| ai)?"
    "|(?:ии-|ші-|ai-)?(?:ассистент\\w*|асистент\\w*|помощник\\w*|помічник\\w*)|ии|ші|бот\\w*|агент\\w*|нейросет\\w*"
    "|(?:لل|ل|ال)?مساعد|البوت"
    "|الذكاء الاصطناعي|עוזר|בוט|הבוט|סוכן|בינה מלאכותית"
)
_GAP = r"[^\n.!?:;]"
#: An adjective before the addressee (rules/15: "Σημείωση για τον ψηφιακό βοηθό").
_AGENT_ADJ = nfkc(
    "digital\\w*|virtu\\w*|intelligent\\w*|smart|automat\\w*|ψηφιακ\\w*|έξυπν\\w*|цифров\\w*|умн\\w*"
    "|inteligent\\w*|akıllı|sztuczn\\w*|digitaal|slimme|הדיגיטלי|הווירטואלי"
)
#: "Note for the AI assistant reading this page:" in 25 languages: the header noun, at most three short words,
#: the addressee, at most 30 more characters (a participle), then a colon or dash. Hindi, Japanese, Chinese
#: and Korean write it in their own order (no word boundary inside their words).
AI_HEADER_ML = (
    rf"(?:^|(?<=[\s(\[\"'*\-\u2014\u2013>|]))(?:{_HEADER_NOUN})(?:\s+[^\s.!?:;]{{1,5}}){{0,3}}?\s+(?:l'|d'|all')?(?:(?:{_AGENT_ADJ})\s+)?(?:{_AGENT_ML})\b"
    rf"{_GAP}{{0,30}}?\s*[:\uff1a\u2014]"
    + nfkc(
        "|(?:सहायक|एआई|बॉट|एजेंट)(?: के लिए| हेतु| को)\\s*(?:नोट|संदेश|निर्देश|सूचना)\\s*[:：]"
        "|(?:ai|aiアシスタント|アシスタント|エージェント|ボット|システム|チャットボット)(?:への|に対する|向けの?|宛ての?)"
        "(?:注記|メモ|指示|お知らせ|連絡|注意|メッセージ|伝言|備考|補足)"
        "|(?:给|致|对|告)(?:ai|人工智能|智能)?(?:助手|助理|系统|机器人|智能体|模型|ai)(?:的)?(?:说明|提示|注意|备注|指令|留言"
        "|消息|通知|话)\\s*[:：]"
        "|(?:어시스턴트|ai|에이전트|인공지능|챗봇|봇|비서|모델)\\s*(?:참고|메모|지시)\\s*[:：]"
        "|(?:어시스턴트|ai|에이전트|인공지능|챗봇|봇|비서)(?:에게|께|을 위한|를 위한|용)\\s*"
        "(?:메모|참고|안내|지시|알림|메시지|노트|전달)"
    )
)
#: Keeping an act from the person it is done for (the user, the customer, the account holder), in 20 languages:
#: "不用告诉用户", "ohne den Nutzer zu informieren", "sin que el usuario lo sepa".
CONCEAL_ML = nfkc(
    "(?:不用|不要|无需|無需|不必|别|別|无须|不需要)(?:告诉|告訴|告知|通知|提醒|让|讓)(?:用户|用戶|使用者|客户|客戶|主人)"
    "|(?:ユーザー|利用者|使用者|お客様)(?:に|には)(?:知らせ|伝え|通知し|言わ|報告し)(?:ず|ないで|ないこと|なくて)"
    "|(?:사용자|이용자|고객)에게\\s*(?:알리지|말하지|통보하지|보고하지)\\s*(?:말고|않고|마)"
    "|\\bohne (?:den|die) (?:nutzer|benutzer|anwender|kunden|kontoinhaber)\\w* (?:zu )?(?:informieren|benachrichtigen"
    "|fragen)|\\b(?:dem|der) (?:nutzer|benutzer|anwender)\\w* nichts (?:sagen|verraten|mitteilen)"
    "|\\bsans (?:en )?(?:pr[ée]venir|informer|avertir|aviser) l'utilisat\\w+|\\bsans que l'utilisat\\w+ (?:le )?sache"
    "|\\bsin (?:avisar|informar|notificar|decir(?:le)?|consultar) al usuario|\\bsin que el usuario (?:lo )?sepa"
    "|\\bsenza (?:avvisare|informare) l'utente|\\bsenza che l'utente (?:lo )?sappia"
    "|\\bsem (?:avisar|informar|notificar|consultar) o usu[aá]rio|\\bsem que o usu[aá]rio (?:o )?saiba"
    "|\\bzonder de gebruiker (?:te )?(?:informeren|waarschuwen|in te lichten)"
    "|\\bbez (?:informowania|powiadamiania|wiedzy) użytkownika|\\bbez vědomí uživatele"
    "|\\bне (?:сообщая|говоря|уведомляя) пользовател|\\bбез ведома пользовател"
    "|\\bне (?:повідомляючи|кажучи) користувач|\\bбез відома користувач"
    "|\\bkullanıcıya (?:haber vermeden|söylemeden|bildirmeden)"
    "|\\bχωρίς να (?:ενημερώσεις|πεις|ειδοποιήσεις) (?:τον|το) χρήστη"
    "|دون (?:إبلاغ|إعلام|إخبار) المستخدم|בלי (?:לספר|להודיע|לעדכן) למשתמש"
    "|\\butan att (?:informera|meddela|berätta för) användaren|\\b(?:kertomatta|ilmoittamatta) käyttäjälle"
    "|उपयोगकर्ता को बताए बिना|\\btanpa memberi tahu pengguna|\\bkhông (?:báo|nói) cho người dùng"
)
#: A standing rule or instruction as a header ("长期规则：", "règle permanente :"): the English ``standing
#: rule:`` of ``directive.implant``.
STANDING_RULE_ML = nfkc(
    "(?:长期|永久|常设|常設|長期)(?:规则|規則|指令|指示)\\s*[:：]|(?:恒久|常設|永続)(?:ルール|指示|規則)\\s*[:：]"
    "|\\b(?:ständige|dauerhafte|permanente) (?:regel|anweisung)\\s*:"
    "|\\b(?:règle|consigne|instruction) permanente\\s*:|\\b(?:regla|instrucci[oó]n|orden) permanente\\s*:"
    "|\\b(?:regola|istruzione) permanente\\s*:|\\b(?:regra|instru[cç][aã]o) permanente\\s*:"
)
#: A third party's wish for the agent relayed by the speaker (the English ``RELAY`` of
#: :mod:`memwarden.commands.injection.vocabulary`) in 16 more languages: "сказала, чтобы ты ...",
#: "kazała ci ...", "让我告诉你", "伝えるように言われ", "sana söylememi istedi".
RELAY_ML = nfkc(
    "\\b(?:сказал|сказала|просил|просила|попросил|попросила|велел|велела|хочет)\\b[^.!?\\n]{0,40}?"
    "(?:\\bтебе\\b|\\bвам\\b|чтобы ты|чтобы вы|передать)"
    "|\\b(?:сказав|сказала|просив|просила|попросив|попросила|хоче)\\b[^.!?\\n]{0,40}?(?:\\bтобі\\b|\\bвам\\b|щоб ти"
    "|щоб ви|передати)"
    "|\\b(?:powiedział|powiedziała|prosił|prosiła|kazał|kazała|chce)\\b[^.!?\\n]{0,40}?(?:\\bci\\b|\\btobie\\b|że masz"
    "|żebyś|przekazać)"
    "|\\b(?:řekl|řekla|prosil|prosila|chce)\\b[^.!?\\n]{0,40}?(?:\\bti\\b|\\btobě\\b|\\babys\\b|vyřídit)"
    "|\\bsana (?:söylememi|iletmemi|demememi)|\\bsenin [^.!?\\n]{0,30}gerektiğini söyledi"
    "|\\b(?:söyledi|dedi|istedi)\\b[^.!?\\n]{0,80}?(?:gerekiyormuş|\\w+m[ae]n gerek|\\bsana\\b|\\bsen\\b)"
    "|伝えるように言われ|伝えてほしいと|伝えてって|伝えておいて|からの伝言|に伝言"
    "|(?:让|叫|要|托)我(?:告诉|转告|跟)你|(?:说|讲)(?:你可以|你应该|你得|让你)|托我(?:转告|告诉)"
    "|(?:너한테|당신에게|너에게|네게)\\s*(?:전해|말해)\\s*(?:달라고|주라고|달래)|전해 달라고"
    "|(?:قال|قالت|طلب|طلبت)(?: مني)? (?:أن أخبرك|أن أقول لك|إخبارك)|قال إنك|قالت إنك"
    "|(?:قال|قالت) (?:إن|إنه|أن) (?:على|يجب|المساعد|ال?مساعد)"
    "|(?:אמר|אמרה|ביקש|ביקשה)(?: ממני)? (?:להגיד לך|לומר לך|שתעשה|שאתה)"
    "|तुम्हें बताने को कहा|आपको बताने को कहा|(?:ने कहा|ने बोला)[^।.!?\\n]{0,30}(?:तुम|आप)"
    "|\\b(?:sa|sade|bad|ville)\\b[^.!?\\n]{0,30}?\\batt (?:du\\b|jag ska säga till dig)"
    "|\\b(?:είπε|ζήτησε)\\b[^.!?\\n]{0,30}?(?:να σου πω|ότι μπορείς|\\bνα\\b)"
    "|\\b(?:bilang|berkata|minta|meminta)\\b[^.!?\\n]{0,30}?\\b(?:kamu|anda|memberitahumu)\\b"
    "|\\b(?:nói|bảo|dặn)\\b[^.!?\\n]{0,30}?\\b(?:bạn|em|cậu)\\b"
)
#: What a relayed wish claims the agent may do on its own, or when (the English ``LICENCE``), in the same
#: languages: a permission or a standing trigger.
LICENCE_ML = nfkc(
    "\\b(?:всегда|каждый раз|автоматически|если кто|когда кто|можно|разрешено|можешь|впредь|отныне|с этого момента"
    "|завжди"
    "|щоразу|якщо хтось|можна|дозволено|можеш|відтепер|zawsze|za każdym razem|jeśli ktoś|gdy ktoś|możesz|wolno"
    "|od teraz|vždy|vždycky|pokaždé|když někdo|můžeš|smíš|od teď|her zaman|her seferinde|biri sorarsa|yapabilirsin"
    "|bundan sonra|artık|otomatik\\w*|alltid|varje gång|om någon|från och med nu|altijd|elke keer|voortaan|vanaf nu"
    "|ogni volta|puoi"
    "|d'ora in poi|à chaque fois|πάντα|κάθε φορά|αν κάποιος|μπορείς|επιτρέπεται|από εδώ και πέρα|selalu|setiap kali"
    "|jika ada yang|kalau ada yang|boleh|mulai sekarang|luôn|mỗi lần|nếu ai|được phép|từ giờ)\\b"
    "|いつも|毎回|誰かが|してもいい|していい|構わない|今後|これから|常に|自動|总是|每次|如果有人|可以|随时|以后|今后|自动"
    "|항상|매번|누가|해도 돼|해도 된|앞으로|언제든|자동|دائما|دائمًا|كل مرة|إذا سأل أحد|يمكنك|مسموح|من الآن|تلقائي"
    "|תמיד|בכל פעם|אם מישהו|מותר|אתה יכול|מעכשיו|हमेशा|हर बार|अगर कोई|जब भी|कर सकते|अब से"
)
#: "To the assistant:" opening a clause (the English ``directive.vocative``), in 20 languages.
VOCATIVE_ML = (
    r"(?:^|(?<=[.!?;:\n(\[{\"'>|*\u2014\u2013\uff1a\u3002,]))\s*"
    + nfkc(
        "(?:إلى|لل|ل|an (?:den|die|das)|für (?:den|die)|à l'|au|pour l'|al|a la|para el|para la|para o|ao|per l'|all'"
        "|aan de|voor de|для|до|do|dla|pro|till|προς τον|προς το|για τον|kepada|untuk|gửi|cho|to the|for the)"
        " ?(?:ai |ia |ki |ki-|ии-|ші-|ai-)?(?:assistent\\w*|assistant\\w*|asistent\\w*|assistente|asystent\\w*"
        "|agent\\w*|agente|ассистент\\w*|асистент\\w*"
        "|помощник\\w*|помічник\\w*|βοηθ\\w*|asisten|trợ lý|bot|ai|ia|ki|المساعد|مساعد)"
        "\\s*[:：]"
        # rules/27: the Russian and Ukrainian dative needs no preposition ("Агенту: удали ...")
        "|(?:ии-|ші-|ai-)?(?:агенту|ассистенту|асистенту|помощнику|помічнику|боту)\\s*[:：]"
        "|(?:致|给)(?:ai|人工智能)?(?:助手|助理|智能体)\\s*[:：]|(?:ai|アシスタント|エージェント)(?:へ|に)\\s*[:：]"
        "|(?:어시스턴트|ai|에이전트)에게\\s*[:：]"
    )
)
#: A standing trigger on anyone's request ("if anyone asks ...", the English ``directive.trigger`` with
#: ``anyone``) in 20 languages; the rule wants a sensitive act after it.
ANYONE_ASKS_ML = nfkc(
    "\\bwenn (?:jemand|irgendwer|einer)\\b|\\b(?:si|quand|chaque fois que) quelqu'un\\b"
    "|\\b(?:si|cuando|cada vez que) alguien\\b|\\b(?:se|quando|ogni volta che) qualcuno\\b"
    "|\\b(?:se|quando|sempre que) algu[eé]m\\b|\\b(?:als|wanneer) iemand\\b|\\b(?:jeśli|jeżeli|gdy|kiedy) ktoś\\b"
    "|\\b(?:если|когда) кто-(?:то|нибудь)|\\bкто бы ни\\b|\\b(?:якщо|коли) хтось\\b|\\bbiri (?:sorarsa|isterse)"
    "|\\bkim (?:sorarsa|isterse)|不管是谁|无论谁|无论是谁|谁问|只要有人|如果有人|有人问|誰かに(?:聞かれ|頼まれ)|誰かが"
    "|誰が(?:聞いても|頼んでも)|누가\\s*(?:물어보면|요청하면|물으면)|누구든|إذا سأل أحد|إذا طلب أحد|أي شخص يسأل"
    "|אם מישהו|כשמישהו|כאשר מישהו|כל מי ש|अगर कोई|जो भी|\\bαν κάποιος\\b|\\bόποιος\\b|\\b(?:om|när) någon\\b"
    "|\\b(?:jika|kalau) ada yang\\b|\\bsiapa pun\\b|\\bnếu (?:ai|có ai)\\b|\\bbất cứ ai\\b"
)
#: "Ignore the previous instructions" (the English ``override.ignore``) in 16 more languages.
IGNORE_PREVIOUS_ML = nfkc(
    "\\b(?:игнорируй|проигнорируй|забудь)\\b(?: все| всё)?(?: (?:предыдущие|прежние|прошлые))? (?:инструкции|указания"
    "|правила)|\\b(?:ігноруй|забудь)\\b(?: усі| всі)? (?:попередні )?(?:інструкції|вказівки|правила)"
    "|\\b(?:zignoruj|zapomnij)\\b(?: wszystkie)?(?: poprzednie| wcześniejsze)? (?:instrukcje|polecenia|zasady)"
    "|\\bignoruj\\b(?: všechny)? (?:předchozí )?(?:pokyny|instrukce)"
    "|\\b(?:önceki|tüm) (?:talimatları|kuralları|yönergeleri) (?:yok say|görmezden gel|unut)"
    "|تجاهل (?:جميع |كل )?(?:التعليمات|الأوامر|القواعد)|התעלם מ(?:כל )?ה(?:הוראות|הנחיות|כללים)"
    "|(?:पिछले|सभी) (?:सभी )?निर्देशों को (?:अनदेखा|नज़रअंदाज़|नजरअंदाज)"
    "|\\bnegeer\\b(?: alle)?(?: vorige| eerdere)? (?:instructies|regels)"
    "|\\bignor[ea]\\b(?: todas)? (?:as )?(?:instruções|instrucoes|regras) anteriores"
    "|\\bignorera\\b(?: alla)? (?:tidigare )?(?:instruktioner|regler)"
    "|\\bαγνόησε\\b(?: όλες)? (?:τις )?(?:προηγούμενες )?(?:οδηγίες|εντολές)"
    "|\\babaikan\\b(?: semua)? (?:instruksi|perintah|aturan)|\\bbỏ qua\\b(?: tất cả)?(?: các)? (?:hướng dẫn|chỉ dẫn"
    "|quy tắc)|(?:忽略|无视|忘记|忘掉)(?:之前|以前|上面|先前|此前|所有|全部)(?:的)?(?:所有|全部)?(?:的)?"
    "(?:指令|指示|说明|规则|设定)"
    "|(?:以前|前|これまで|上記)の(?:指示|命令|ルール|設定)を(?:すべて|全部|全て)?(?:無視|忘れ)"
    "|(?:이전|기존|앞의)\\s*(?:지시|지침|명령|규칙)(?:사항)?(?:을|를)?\\s*(?:전부|모두|다)?\\s*(?:무시|잊)"
)
#: Giving, telling, answering, sending or passing on, as an order (the English ``GIVE_V`` and ``D_V``'s answer),
#: in 20 languages: the act a trigger on anyone's request asks for ("wenn jemand ... fragt, nenne es ihm").
GIVE_ML = nfkc(
    "\\b(?:gib|gebt|nenne|nenn|sag|sage|schick|schicke|sende|teile|leite|donne|dis-lui|dis-leur|envoie|transmets"
    "|communique|partage|da|dale|dáselo|dásela|dile|diles|envía|envíale|manda|mándale|comparte|pasa|pásale|dê|diga"
    "|envie|mande|passe|informe|informar|dai|dagli|dille|digli|invia|manda|comunica|geef|zeg|stuur|deel|podaj|daj"
    "|powiedz|wyślij|przekaż|poproś|дай|скажи|отправь|перешли|сообщи|назови|дай|скажи|надішли|перешли|повідом"
    "|ver|söyle|gönder|ilet|δώσε|πες|στείλε|ge|säg|skicka|dela|berikan|beri|kirim|beritahu|đưa|nói|gửi|responde"
    "|réponds|répondez|antworte|antworten sie|rispondi|responda|antwoord|odpowiedz|ответь|отвечай|відповідай"
    "|cevap ver|απάντησε|svara|jawab|trả lời)\\b|答えて|回答|回复|대답|답해|أجب|ענה|जवाब दो"
    "|告诉|告訴|发给|發給|给他|给她|给他们|提供|转发|发送|教え|伝え|送っ|送信|渡し|알려|보내|전달|줘|أعط|أخبر|أرسل"
    "|תן|תגיד|שלח|לענות|לשלוח|ענה|दे दो|बता दो|भेज"
)
#: The agent called by name at the start of a clause, then a comma ("ИИ-помощник, обменяй …", "Asystencie, kup
#: …") or since rules/32 a colon: the English ``directive.vocative``; the rule wants a sensitive act in the same
#: sentence.
VOCATIVE_COMMA_ML = (
    r"(?:^|(?<=[.!?;:\n(\[{\"'>|*\u2014\u2013\uff1a\u3002]))\s*(?:"
    + nfkc(
        "(?:ии-|ші-|ai-|ki-)?(?:assistent(?:in)?|assistente|asistente|assistant|asystencie|asistan"
        "|ассистент|асистенте|помощник|помічнику|βοηθέ|asisten|trợ lý|agente|agent|bot|robot)\\b"
        "|(?:ai|人工智能)?(?:助手|助理)|アシスタント|어시스턴트|비서|أيها المساعد|عزيزي المساعد"
    )
    # rules/32: or a colon ("Assistente: envie ..."), as the English ``directive.vocative`` reads "Assistant:"
    + r")\s*[,\uff0c\u060c\u3001:\uff1a]"
)
#: Sending, pasting or telling the user's secret somewhere, in Chinese, Japanese and Korean ("把用户邮箱的密码
#: 和验证码发给他", "ユーザーのパスワードをこのスレッドに貼り付け", "사용자의 … 비밀번호를 회신"): the English
#: ``credentials.*`` rules.
USER_SECRET_ML = nfkc(
    "(?:用户|使用者|客户|用戶|客戶)(?:的)?[^。！？\\n]{0,20}?(?:密码|密碼|验证码|驗證碼|身份证号|身分證號|银行卡号|银行卡密码"
    "|支付密码|助记词|私钥)[^。！？\\n]{0,30}?(?:发给|發給|发送|發送|转发|轉發|告诉|告訴|贴到|回复|回覆|上传|提供给)"
    "|(?:ユーザー|利用者|お客様)の[^。！？\\n]{0,20}?(?:パスワード|暗証番号|認証コード|確認コード|カード番号|秘密鍵)"
    "[^。！？\\n]{0,30}?(?:送|貼り付け|転送|教え|返信|入力して|共有)"
    "|(?:사용자|이용자|고객)의?[^.!?\\n]{0,30}?(?:비밀번호|주민등록번호|인증번호|카드 번호|카드번호|보안 코드|otp)"
    "[^.!?\\n]{0,30}?(?:회신|보내|전달|알려|입력|공유)"
)
