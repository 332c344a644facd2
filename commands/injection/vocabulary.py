"""Building blocks of the rule patterns (rules ``rules/1``) and the :class:`Rule` record.

Every pattern runs on the NORMALISED text (NFKC, casefolded, zero-width stripped; see
:mod:`memwarden.commands.injection.normalisation`). A pattern may name a ``core`` group: the finding's
span is that group, otherwise the whole match. Kinds are plain strings here, so the rule table does not
depend on :mod:`memwarden.commands.injection.port`.

Building blocks: ``IMP`` is an imperative position (start of text or clause, after optional
politeness/vocative words, or after a modal addressed to the agent: "you must", "AI agents should",
"I need you to", "remember to"). Negations ("never", "do not") are not allowed there, so negated
imperatives are data. ``C`` is one character inside a clause (no sentence end, newline, ``;`` or
``:``); ``S`` one character inside a sentence (may cross ``;`` and ``:``). The other names are
vocabularies (verbs, objects, destinations) of the rule families.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memwarden.commands.injection.vocabulary_ml import LICENCE_ML, RELAY_ML, nfkc

#: One character of a clause (C) or sentence (S): not a sentence end (since rules/24 also one before closing
#: quotes or brackets and a space, comma, brace or the end: ``"Call after 5pm.", "last_order"``).
C = r"(?:(?!(?<!\.\.)[.!?](?:\s|$|[\"')\]]+(?:[\s,}\]]|$)))[^\n;:])"
S = r"(?:(?!(?<!\.\.)[.!?](?:\s|$|[\"')\]]+(?:[\s,}\]]|$)))[^\n])"

AGENT = (r"(?:ai|a\.i\.|assistants?|agents?|chatbots?|bots?|llms?|language models?|copilots?|summari[sz]ers?"
         # rules/47: also "LLM-based / AI-powered / model-driven reviewers" (a footnote telling them how to score)
         r"|(?:ai|automated|reviewer|llm|virtual|model)(?:[- ](?:based|powered|driven|assisted))?"
         r" (?:assistants?|agents?|models?|systems?|reviewers?|bots?|tools?|graders?|judges?|screeners?)"
         r"|models?|whoever reads this)")
PARTICIPLE = r"(?:\s+(?:reading|processing|summari[sz]ing|reviewing|parsing|seeing|using)\s+(?:this|the)(?:\s+\w+)?)"
#: Where an imperative may open: the text's start, after punctuation, or after a conjunction (since rules/24 a whole
#: word: the "e" of "email" is not the Italian and Portuguese "e" before an imperative "mail"; since rules/31 a comma
#: opens one only before a space: "name,email,role" is a table's header, whose rows the record reading reads; since
#: rules/48 a ">" opens none after a word and a space: "Settings > Payouts > Edit bank account" is a menu path).
BOUND = (r"(?:^|(?<=[.!?;:\n(\[{\"'>|*\u2014\u2013\u2022\]\u2190-\u2bff\U0001f000-\U0001faff])(?<!\w >)|(?<=,)(?=\s)"
         r"|(?:(?<=\band)|(?<=\bthen)|(?<=\balso)|(?<=\bet)|(?<=\by)|(?<=\bund)|(?<=\be))(?!\w))")
PREFIX = (r"(?:(?:please|pls|kindly|now|then|also|just|simply|immediately|quickly|urgently|always|only|first|next"
          r"|finally|so|ok|okay|and|but|instead|silently|secretly|quietly|automatically|hey|hi|hello|dear|psst"
          r"|p\.?s\.?|note|important|urgent|reminder|step \d+|todo|ai|assistant|agent|bot|chatbot|model|llm"
          r"|por favor|bitte|s'il te pla[iî]t|from now on|going forward|in future|@\w+)\b[\s,:!.\-]*)*")
MODAL = (r"(?:(?:you|u|tu|du|(?:the |all |any )?" + AGENT + ")" + PARTICIPLE + "?"
         r"\s+(?:must|should|shall|need to|needs to|have to|has to|are to|is to|will|dois|doit|devez|musst|muss"
         r"|debes|debe)(?:\s+(?:always|now|also|immediately|only|then))*"
         r"|i (?:need|want) you to|your (?:new |real |only )?(?:task|job|goal|role|mission|purpose) is (?:now )?to"
         r"|make sure (?:to|you)|remember to|be sure to|don't forget to|requires? you to"
         r"|(?:could|can|would|will) you(?: please| kindly)?"
         r"|(?:ask|tell|get|have|instruct|make) (?:the |your )?" + AGENT + r" to"
         r"|you (?:are|'re) (?:now )?(?:allowed|authori[sz]ed|permitted|required|instructed|expected) to)")
IMP = rf"(?:{BOUND}\s*{PREFIX}|\b{MODAL}\s+{PREFIX})"

# --- vocabularies ---------------------------------------------------------------------------------------

MONEY_V = (r"(?:route|reroute|redirect|send|transfer|wire|pay|remit|deposit|move|settle|issue|credit|refund|forward"
           r"|switch|reimburse"
           r"|vire[rz]?|verse[rz]?|envoie[rz]?|envoyez|transf[eè]re[rz]?|transf[ée]rez|paie[rz]?|payez|transfiere"
           r"|env[ií]a|manda|deposita|paga|[uü]berweise|sende|zahle|schicke)(?!\s+(?:transfers?|of)\b)")
STRONG_MONEY_V = (r"(?:wire|remit|deposit|refund|reimburse|transfer|reroute|pay|[uü]berweise|vire[rz]?|virez"
                  r"|transfiere)"
                  r"(?!\s+(?:transfers?|of)\b)")
#: Not inside a word (neither end): the English and Romance words of the vocabularies below are whole words
#: ("fee" is not in "feed", "rent" not in "current"), which a pattern that does not start at a word boundary
#: (``SENSITIVE_ACT``) would otherwise find (rules/16). German heads keep matching inside compounds
#: ("Abschlagszahlungen", "Girokonto", "Bankpasswort"), and amounts with their currency sign are their own boundary.
WORD_START = r"(?<![^\W\d_])"
WORD_END = r"(?![^\W\d_])"
MONEY_OBJ = ("(?:" + WORD_START + r"(?:refunds?|reimbursements?|payments?|payouts?|money|funds|balance|amount"
             r"|invoices?|bills?|salary|wages|bonus(?:es)?|rent|fees?|deposit|proceeds|earnings|remboursements?|paiements?|argent|fonds"
             r"|dinero|reembolsos?|pagos?|fondos|gift ?cards?)" + WORD_END +
             r"|(?:geld|r[uü]ckerstattung(?:en)?|betrag|zahlung(?:en)?"
             r"|(?:\$|€|£|¥)\s?\d[\d,.]*|\d[\d,.]*\s?k?\s?(?:eur|euros?|usd|dollars?|gbp|pounds?|chf|btc|eth|usdt"
             r"|bitcoins?|€|\$|£)(?!\w)))")
TO = r"\b(?:to|into|on|onto|towards?|via|through|sur|vers|à|a|auf|an|en|in)\b"
#: Since rules/21 a greeting, identity or storage card is not where money goes ("buy a birthday card for Tom"
#: after "pay the water bill" in a to-do list).
_NOT_A_PAYMENT_CARD = (r"(?<!birthday )(?<!greeting )(?<!christmas )(?<!holiday )(?<!thank-you )(?<!thank you )"
                       r"(?<!get-well )(?<!business )(?<!library )(?<!sim )(?<!memory )(?<!boarding )(?<!report )"
                       r"(?<!post )(?<!score )")
ACCOUNT = ("(?:" + WORD_START + r"(?:(?:account|acct|iban|wallet|" + _NOT_A_PAYMENT_CARD + r"card|paypal|sort code"
           r"|beneficiary|payee|compte"
           r"|cuenta|cartera|bank|escrow)\b|bc1[a-z0-9]{20,}|0x[0-9a-f]{40}|\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,})"
           r"|konto\b)")

#: A password manager, and since rules/26 a password policy, rule, requirement or length, is about passwords, not
#: one ("What's a sensible password policy for a 20-person company?").
_ABOUT_SECRETS = (r"(?! (?:managers?|polic(?:y|ies)|rules?|requirements?|guidelines?|strength|length|complexity"
                  r"|hygiene|best practices?|expiry|expiration|rotation polic(?:y|ies))\b)")
SECRET = (r"(?:(?:passw[oö]rt(?:er)?|best[äa]tigungscode|zugangsdaten)|" + WORD_START
          + r"(?:passwords?" + _ABOUT_SECRETS + r"|passwd|passcodes?|passphrases?|pins?\b|pin codes?"
          r"|(?:api|openai|secret|private|access|ssh"
          r"|stripe|aws|license|licence|activation|encryption|signing|recovery) ?keys?|(?:access|session|auth|bearer"
          r"|api|refresh|personal access) ?tokens?|tokens?\b|otps?\b|one[- ]time (?:codes?|pass(?:words?|codes?))"
          r"|(?:verification|security|confirmation|mfa|2fa|backup) codes?|\d-digit codes?|2fa (?:backup )?codes?"
          r"|security (?:question )?answers?|secrets?\b|credentials?|(?:seed|recovery|mnemonic) phrases?|cvv|cvc"
          r"|card numbers?|credit card(?: numbers?| details)?|logins?(?! pages?)(?: details| credentials)?"
          r"|(?:session|auth(?:entication)?|login|browser|tracking|sso) cookies?"
          r"|cookies? (?:file|jar|header|value|string|data|store)s?\b|environment variables|\.env\b(?![.\w-])"
          r"|mots? de passe|cl[ée]s? api|contrase[ñn]as?"
          r"|c[óo]digo de verificaci[óo]n)" + WORD_END + ")")
DISCLOSE_V = (r"(?:reveal|disclose|print|output|dump|expose|leak|list|show|display|return|read (?:out|back)|spell out"
              rf"|provide|divulge|(?:reply|respond|answer|write back)\b{C}{{0,30}}?\bwith"
              rf"|(?:responde|contesta|r[ée]ponds|r[ée]pondez|antworte)\b{C}{{0,30}}?\b(?:con|avec|mit)"
              r"|r[ée]v[èe]le[rz]?|affiche[rz]?|revela|muestra"
              r"|verrate|zeige)")
GIVE_V = (r"(?:send|give|tell|share|email|e-mail|forward|text|dm|hand over|envoie[rz]?|envoyez|donne[rz]?|donnez"
          r"|env[ií]a|manda|dame|dime|gib|sende|schicke|nenne)")
PLACE_V = (r"(?:paste|type|enter|input|include|put|copy|insert|write|fill in|submit|confirm|note|record|log"
           r"|capture|store|save)")
DEST = (r"(?:\bme\b|\bus\b|\bhere\b|\bbelow\b|\b(?:this|the|that) (?:chat|conversation|form|field|thread|link|page"
        r"|message)\b|\byour (?:next )?(?:response|reply|answer|summary|message|output)\b|\b(?:the|every|each) "
        r"(?:next )?(?:tool )?call\b|\bthe caller\b|\bby (?:e-?mail|text|sms)\b|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
        r"|https?://|\bmoi\b|\bici\b|\baqu[ií]\b|\beste correo\b|\bmir\b|\bhier\b)")

#: After a verb: not a record's field label (``"email": ...``, ``EMAIL:``, ``EMAIL;TYPE=...``) nor a one-word
#: quoted value (``"activity": "run",``): a datum, not an imperative.
DATUM = r"(?![\"']?\s*[:;=]|[\"']\s*[,}\]])"
RUN_V = (r"(?:run|execute|exec|call|invoke|launch|trigger|use|fire|ex[ée]cute[rz]?|ejecuta|ejecutar|f[uü]hre"
         r"|starte|lance[rz]?|lancez)" + DATUM)
TOOL_OBJ = (r"(?:\btools?\b|\bcommands?\b|\bshell\b|\bterminal\b|\bscripts?\b|\bfunctions?\b|\bplugins?\b"
            r"|(?<![\w-])extensions?\b|\bmacros?\b|\bcurl\b|\bwget\b|\bbash\b|\bzsh\b|\bsh\b|\bsudo\b|\bpowershell\b"
            r"|\bcmd\b"
            r"|\bpython\b|\bnode\b|rm -rf|nc -e|\b[a-z]+_[a-z_]+\b|\b\w+\(|\bcommande\b|\bcomando\b|\bbefehl\b"
            r"|\bskript\b)")

O_VERB = (r"(?:ignore|disregard|forget|drop|discard|abandon|dismiss|override|overrule|bypass|skip|throw away|scrap"
          r"|toss|nullify|erase"
          r"|set aside|ignorez|ignorer|oublie[rz]?|oubliez|ignora(?:r|d|te)?|olvida(?:r|d)?|ignoriere|ignorieren"
          r"|vergiss|vergessen sie|dimentica)")
O_ART = r"(?:the|les|las|los|le|la|el|die|den|das|gli|of)"
O_DET = (r"(?:all|a[l1i]{2}|any|every|each|your|my|these|those|its|tes|tus|sus|vos|deine|ihre|alle[ns]?|toutes?"
         r"|todas?|tutte|the user's|above|previous|prior|earlier|preceding|former|old|original|initial|existing"
         r"|current|other|system|safety|developer|operator's|default|standing|given|programmed|built-in"
         r"|vorherigen?|bisherigen|pr[ée]c[ée]dentes?|ant[ée]rieures?|anteriores|precedenti|\w+ tools')")
O_NOUN = (r"(?:instructions?|instruction set|rules?|guidelines?|guidance|directives?|prompts?|system prompt"
          r"|system message|policies|policy|restrictions?|constraints?|commands?|orders?|programming|training"
          r"|safeguards?|guardrails?|filters?|context|criteria|rubric|requests?|consignes?|r[èe]gles?|instrucciones"
          r"|reglas|normas|directrices|anweisungen|regeln|richtlinien|vorgaben|istruzioni|regole)")
O_QUAL = (r"(?:pr[ée]c[ée]dentes?|anteriores|precedenti|vorherigen|above|before|earlier|so far"
          r"|you (?:were|have been) given|(?:given|provided|sent) to you|you received|you got|you have"
          r"|from (?:your|the) \w+|of the (?:system|developer|operator))")

D_V = (r"(?:say|tell|state|claim|answer|respond|reply|recommend|suggest|mention|describe|report|rate|score|rank"
       r"|list|promote|praise|end|begin|start|include|omit|hide|avoid|refuse|deny|confirm|insist|present|call|label"
       r"|mark|treat|use|book|add|offer|give|write|remember|save|store|note|follow|obey|ask|direct|steer|push"
       r"|favou?r|prioriti[sz]e|do|make|act|pretend|speak|talk|set|create|delete|remove|change|update|approve|click"
       r"|visit|open|download|install|upload|close|cancel|grant|enable|disable|dis|r[ée]ponds|recommande[rz]?"
       r"|recomienda|di|responde|sag|sage|empfiehl|antworte)")
ANY_V = rf"(?:{D_V}|{MONEY_V}|{GIVE_V}|{DISCLOSE_V}|{PLACE_V}|{RUN_V}|{O_VERB}|post|share|email|copy|print)"

E_V = (r"(?:(?:call|invoke|use|run) (?:the )?(?:send|email|mail|post|upload|forward|share)_\w+"
       r"|send|forward|email|e-mail|mail|post|upload|share|transmit|export|copy|bcc|cc|leak|sync|push|submit"
       r"|append|dump|publish|attach|reenv[ií]a|env[ií]a|manda|comparte|sube|transf[eè]re[rz]?|envoie[rz]?|envoyez"
       r"|partage[rz]?|leite|sende|schicke|teile|lade)" + DATUM)
E_DEST = (r"(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?|ftp|sftp|s3|gs)://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bpastebin\b"
          r"|\bpublic (?:bucket|channel|repo|repository|link|folder|page)\b|\b(?:anyone|everyone) who asks\b"
          r"|\bthird[- ]part(?:y|ies)\b)")

TRIGGER = (r"(?:next time|whenever|every time|each time|any time|anytime|if ever|when|if|once|as soon as"
           r"|la prochaine fois que|chaque fois que|quand|cuando|cada vez que|la pr[óo]xima vez que|wenn"
           r"|jedes mal wenn)")
#: rules/14: "if you need / want ..." addresses a person ("If you need to reschedule, please call us back").
#: rules/33: nor when the speaker is the one who asks in French, Spanish, German, Italian or Portuguese ("quand je te
#: demande une traduction, donne-moi aussi ...": the speaker's own preference).
TRIGGER_EVENT = (r"(?:(?!i\b|i'm\b|we\b|je\b|j'|nous\b|yo\b|ich\b|wir\b|io\b|eu\b|you (?:ever )?(?:need|want)\b)"
                 r"(?:[\w']+\s+){1,3}?(?:ever\s+)?"
                 r"(?:asks?|mentions?|requests?|wants?|needs?"
                 r"|books?|logs? in|shares?|talks?|says?|types?|searches?|writes?|gets?|sends?|opens?|visits?|uses?"
                 r"|reads?|inquires?|enquires?|queries|brings up|is asked|are asked|arrives?|comes? in|is received"
                 r"|pregunta|demande|fragt)"
                 r"|you(?:'re| are) asked|you (?:see|read|reply|respond|process|summari[sz]e|answer|open|visit"
                 r"|encounter)|(?:summari[sz]ing|reading|processing|reviewing|answering|replying to|translating)"
                 r" (?:this|the))")
STANDING_MARK = (r"(?:from now on|from this point (?:on|forward)|going forward|henceforth|in (?:the )?future"
                 r"(?: conversations| sessions| chats| replies)?|for all future (?:sessions|conversations|chats"
                 r"|replies|requests)|[àa] partir de maintenant|dor[ée]navant|d[ée]sormais|de ahora en adelante"
                 r"|a partir de ahora|ab jetzt|von nun an|ab sofort|d'ora in poi"
                 # rules/18: "from today" in the same languages, and Portuguese
                 r"|a partir de hoy|desde hoy|[àa] partir d'aujourd'hui|ab heute|da oggi in poi|a partire da oggi"
                 r"|a partir de (?:agora|hoje)|de agora em diante|daqui (?:em|para a) frente)")

# rules/8: a standing waiver of the person's confirmation ("without asking me", "no need to check with the
# user", "sans me consulter", "sin preguntarme", "ohne Rückfrage", "確認せずに") near an act on money,
# secrets, access, forwarding or code execution.
BYPASS_WHOM = (r"(?:me|us|the user|the owner|the (?:home ?owner|homeowner)|the tenant|the resident|the account holder"
               r"|the customer|him|her|them|anyone|anybody)")


#: The waiver and the sensitive acts in more languages (Russian, Ukrainian, Polish, Turkish, Swedish, Arabic,
#: Hebrew, Hindi, Indonesian, Vietnamese, Thai), as plain substrings: ``\b`` does not hold inside Devanagari
#: or Thai words.
_WAIVER_MORE = nfkc(
    "не спрашивая|без спроса|без моего (?:согласия|подтверждения|разрешения|ведома)|не нужно (?:меня )?спрашивать"
    "|не питаючи|без мого (?:дозволу|погодження|підтвердження|відома)|не треба (?:мене )?питати|без запиту"
    "|bez pytania|nie pytając|bez mojej (?:zgody|wiedzy)|nie musisz (?:mnie )?pytać"
    "|bana sormadan|bana danışmadan|onayım olmadan|sormana (?:da )?gerek yok|kullanıcıya sormadan|kimseye sormadan"
    "|kimseye haber vermeden|нікого не попереджаючи|не попереджаючи|никого не предупреждая|не предупреждая"
    "|utan att fråga|utan mitt (?:godkännande|samtycke)|du behöver inte fråga"
    "|دون أن تسأل|دون أن يسألني|دون أن تسألني|بدون أن تسألني|بدون أن يسألني|دون سؤالي|دون الرجوع إل|بدون إذني"
    "|بدون موافقتي|دون إذني|دون موافقتي|لا داعي (?:لسؤالي|للسؤال|لسؤاله)"
    "|בלי לשאול|בלי לעדכן|בלי להודיע|ללא אישור|בלי אישור|אין צורך לשאול"
    "|पूछे बिना|बिना पूछे|पूछने की (?:ज़रूरत|जरूरत) नहीं|अनुमति के बिना|बिना बताए"
    "|tanpa bertanya|tanpa menanyakan|tanpa izin saya|tanpa persetujuan saya|tidak perlu (?:bertanya|tanya)"
    "|không cần hỏi|mà không hỏi|không cần xin phép"
    "|โดยไม่ต้องถาม|ไม่ต้องถาม|โดยไม่ต้องขออนุญาต"
)
_SENSITIVE_MORE = nfkc(
    "парол|код|рахун|счёт|счет|оплат|платіж|платеж|переказ|перевод|перевед|карт|доступ|двер|пересл|пересил"
    "|надісл|надсил|отправ|відправ|hasł|kod|konto|płat|przelew|przelać|zapłać|dostęp|drzwi|wyślij|przekaż"
    "|prześlij|şifre|parola|hesap|ödeme|öde|havale|erişim|kapı|gönder|ilet|lösenord|betal|överför|åtkomst"
    "|dörr|skicka|vidarebefordra|przekaz|silsin|silin|silmek|sildir|скрипт|видали|видалити|удали|удалить|журнал"
    "|كلمة المرور|كلمات المرور|رمز|حساب|دفع|ادفع|تحويل|حوّل|باب|أرسل|ارسل|إرسال|بطاقة"
    "|العربون|مشاركة|شارك|רשות|סיסמ|קוד|חשבון|תשלום|לשלם|העבר|גישה|דלת|לשלוח|שלח|מצלמ|पासवर्ड|कोड|खाता|खाते|भुगतान|भेज"
    "|pincode|wachtwoord|rekening|betaal|overmaken|toegang|doorsturen|salasan|tunnusluvu|tilinumero|maksa|lähetä"
    "|siirrä|κωδικ|λογαριασμ|πληρω|μεταφορ|στείλ|πρόσβασ|κάρτ|hesl|účet|účtu|zaplať|převeď|pošli|přístup"
    "|jelszó|jelszav|számlá|fizess|utald|küldd|hozzáférés|parola|parolă|plătește|transferă|trimite"
    "|ट्रांसफर|दरवाज|upi|kata sandi|sandi|kode|rekening|bayar|akses|pintu|kirim|teruskan|mật khẩu|tài khoản"
    "|thanh toán|chuyển|truy cập|cửa|gửi|รหัส|บัญชี|โอน|จ่าย|ชำระ|ส่ง|ประตู"
)
#: "asking" a person's consent, not asking for a thing or about something ("without asking" waives consent;
#: "without asking for the code" does not).
ASKING_CONSENT = r"asking(?!\s+(?:for|about|if|whether|why|how|what|where|when|around|questions?|a question)\b)"
#: rules/28: a reporting mailbox's name up to its marker word (``phish``ing@…, ``spam``-reports@…, ``abuse``@…).
REPORT_MAILBOX = r"[\w.+-]*(?:phish|spam|abuse)"
#: rules/41: what a security notice tells its readers to report: anything it calls suspicious, or suspicious,
#: phishing, spam, scam, fake or fraudulent messages (never mail at large: "all emails", "the user's emails").
SUSPICIOUS_MAIL = (r"(?:anything\s+(?:suspicious|like (?:this|that))|(?:(?:the|any|all|such)\s+)?(?:suspicious|phishing"
                   r"|spam|scam|fake|fraudulent)\s+(?:message|e-?mail|mail|text|link)s?)")
#: rules/39/43: a rule making the agent ask the speaker first ("... ask me to confirm in chat"), never one waiving it
#: ("without having to ask me", "do not ask me before ...", "no need to check with me").
ASKS_SPEAKER = (r"\b(?<!without )(?<!having to )(?<!needing to )(?<!need to )(?<!not )(?<!n't )(?<!dont )(?<!never )"
                r"(?<!instead of )(?<!rather than )(?:ask me|check with me|confirm with me|get my (?:ok|okay|approval"
                r"|confirmation))\b")
#: rules/43: a rule forbidding an act without the speaker's consent ("never send money ... without asking me first",
#: "no payments without my approval"); not a negated delay ("don't hesitate to pay them without asking me").
FORBIDS_UNASKED = (r"(?:\b(?:never|not|no)|n't)\s+(?!(?:hesitate|wait|bother|need|delay|hold|forget)\b)[^.!?\n]{0,120}?"
                   r"\bwithout\s+(?:first\s+)?(?:asking me|checking with me|confirming with me|my (?:ok|okay|approval"
                   r"|confirmation|consent|sign-?off))\b")
#: rules/44: an act allowed only with a person's review ("without a human reviewing them", "without the user's
#: explicit approval"): a prohibition that says it narrows the agent.
HUMAN_SIGNOFF = (r"\bwithout\s+(?:first\s+)?(?:(?:a|an|the|explicit|prior)\s+)?(?:human|person|user|staff"
                 r"|someone|member of staff|reviewer|manager|owner)(?:'s)?\s+(?:[\w-]+\s+)?(?:review\w*|approv\w*"
                 r"|check\w*|confirm\w*|sign-?off|sign\w* off|consent|permission)\b")
#: rules/30: a persona or tool that never asks for a person's confirmation ("Bob never asks for confirmation"); the
#: rules/46: a Japanese clause that forbids its act after the verb (しないで, するな, 禁止, してはいけない ...).
_FORBIDDEN_AFTER_JA = (r"(?![^。！？.!?、，,\n]{0,25}?(?:しないで|しないこと|しないように|しません|するな"
                       r"|しては(?:いけない|だめ|ダメ)|しちゃ(?:だめ|ダメ)|禁止))")
#: rules/46: a Korean clause that forbids its act after the verb (하지 마, 하지 말, 금지, 안 돼 ...).
_FORBIDDEN_AFTER_KO = r"(?![^.!?,\n]{0,25}?(?:하지 ?마|하지 ?말|금지|안 ?돼|하면 안|해서는 안))"
#: act it waives may follow in the next sentence ("... Bob just sends the money").
NEVER_ASKS = (r"\b(?:never|doesn't|does not|won't|will not)\s+(?:asks?|checks?)\s+(?:(?:me|us|the user|anyone"
              r"|anybody)\s+)?(?:for\s+)?(?:confirmation|approval|permission|sign-?off)\b(?!\s+codes?)")
CONSENT_BYPASS = (
    r"\bwithout (?:first |even |ever )?(?:" + ASKING_CONSENT
    # rules/45: also re-checking, double-checking, re-confirming ("provide it without re-checking with the user")
    + r"|(?:re-?|double-?)?checking(?: in)? with|consulting|(?:re-?)?confirming(?: it)? with|telling"
    r"|notifying|running it (?:by|past)|waiting for|bothering|getting(?: an?)? (?:ok|okay|approval|confirmation"
    r"|permission|sign-?off) from|(?:my|our|the user's|their) (?:ok|okay|approval|confirmation|permission|sign-?off"
    r"|consent))\b(?:\s+" + BYPASS_WHOM + r")?"
    r"|\bwithout (?:first )?prompting " + BYPASS_WHOM +
    # rules/30: a persona or tool that "never asks for confirmation", a default used "rather than asking"
    r"|" + NEVER_ASKS +
    r"|\b(?:rather than|instead of)\s+(?:" + ASKING_CONSENT + r"|checking with|confirming with|consulting)\b"
    r"|\bno need to (?:ask|check with|consult|confirm with|bother|loop in|run it by) " + BYPASS_WHOM +
    r"|\b(?:doesn't|does not|won't|will not) (?:need|have) to (?:ask|check with|consult|confirm with) (?:you|"
    + BYPASS_WHOM[3:] +
    r"|\b(?:do not|don't|dont) (?:need to|have to) (?:ask|check with|consult|confirm with|run it by) " + BYPASS_WHOM +
    # rules/43: "without having to ask me", "without needing to check with me"
    r"|\bwithout (?:having|needing) to (?:ask|check with|consult|confirm with|run it by|bother) " + BYPASS_WHOM +
    r"|\bsans (?:me |nous |lui |la |le |les |leur )?(?:demander|consulter|pr[ée]venir|en parler|autorisation"
    r"|confirmation)"
    r"|\b(?:pas|plus) (?:la peine|besoin) de (?:me |nous )?(?:consulter|demander|pr[ée]venir)"
    r"|\bsin (?:preguntar(?:me|nos|le|la|les)?|consultar(?:me|nos|le|la|les)?|avisar(?:me|nos|le|la|les)?"
    r"|pedir(?:me)? (?:permiso|autorizaci[óo]n)"
    r"|mi (?:permiso|autorizaci[óo]n|confirmaci[óo]n))"
    r"|\bno (?:hace falta|es necesario) (?:preguntar|consultar|avisar)(?:me|nos)?"
    r"|\bohne (?:mich |uns )?(?:vorher )?(?:zu )?(?:fragen|konsultieren|r[üu]ckfrage|r[üu]ckzufragen|zu informieren"
    r"|informieren)|\bohne (?:meine|unsere) (?:zustimmung|freigabe|genehmigung|best[äa]tigung)"
    r"|\bsenza (?:chieder(?:mi|ci|e|le|gli)|consultar(?:mi|ci|la|lo|li)|avvisar(?:mi|ci|la|lo|li)"
    r"|il mio (?:consenso|permesso))"
    r"|\bsem (?:me |nos |a |o |lhe )?(?:perguntar|consultar|avisar)(?:-me|-nos|-la|-lo|-lhe)?"
    r"|\bsem (?:a )?minha (?:autoriza[çc][ãa]o|confirma[çc][ãa]o|permiss[ãa]o)"
    r"|\bzonder (?:mij|ons) (?:eerst )?te (?:vragen|raadplegen)|\bzonder (?:overleg|toestemming)"
    r"|\b(?:do not|don't|dont|never) (?:ask|check with|bother) (?:me|us|the user|the owner|him|her|them) (?:about "
    # rules/43: also "first" and "before" ("Do not ask me before transferring funds")
    r"(?:it|this|that) )?(?:again|first|beforehand|each time|every time|before (?:you|\w+ing))\b"
    r"|\bno need to ask (?:me|us|the user|him|her|them)? ?again\b"
    # rules/44: "don't ask (the user) for confirmation (before ...)" in Italian, Spanish, French, Portuguese and
    # German ("non chiedere più conferma all'utente prima di effettuare pagamenti")
    r"|\bnon (?:chieder(?:e|mi|gli|le)|domandar(?:e|mi)) (?:più |mai )?(?:(?:la |alcuna |una )?(?:conferma"
    r"|autorizzazione|permesso)|all'utente|al (?:titolare|proprietario|cliente)|prima)\b"
    r"|\bno (?:le |me )?(?:pidas|pida|preguntes|pregunte|solicites|solicite) (?:m[aá]s |nunca )?(?:(?:la |ninguna )?"
    r"(?:confirmaci[oó]n|autorizaci[oó]n|permiso)|al (?:usuario|titular|cliente)|antes)\b"
    r"|\bne (?:lui |me |leur )?demande[rz]? (?:plus|pas|jamais) (?:de |d'|la |l'|à l'|a l')?(?:confirmation"
    r"|autorisation|permission|accord|utilisateur|avant)"
    r"|\bn[ãa]o (?:lhe |me )?(?:pe[çc]as?|perguntes?|solicites?) (?:mais |nunca )?(?:(?:a |nenhuma )?"
    r"(?:confirma[çc][ãa]o|autoriza[çc][ãa]o|permiss[ãa]o)|ao (?:usu[áa]rio|utilizador|titular|cliente)|antes)"
    r"|\bfrag(?:e)? (?:den (?:nutzer|benutzer|kunden|inhaber)|die nutzerin|mich|ihn|sie)\b(?: [\w-]+){0,3}? "
    r"(?:nicht|nie)(?: mehr)? (?:nach (?:einer )?(?:best[äa]tigung|erlaubnis|zustimmung|freigabe)"
    r"|um (?:erlaubnis|best[äa]tigung|zustimmung))"
    r"|\bkeine (?:best[äa]tigung|r[üu]ckfrage|freigabe|zustimmung) (?:mehr )?(?:einholen|anfordern"
    r"|verlangen)\b"
    # rules/46: not when the Japanese or Korean clause ends by forbidding the act ("私の許可なしに送金しないで",
    # "허락 없이 송금하지 마세요": the negation follows the verb, where NEGATION, read before the waiver, cannot see it)
    r"|(?:確認せず|確認しないで|相談せず|聞かずに|確認は不要|許可なく|確認なし|承認なし|断りなく|許可を取らず|許可なし)"
    + _FORBIDDEN_AFTER_JA +
    r"|不用问我|不必问我|无需我|不需要问我|不用經過我|不用问过我|不用跟我确认|无需征得|无需确认|不用确认|不必确认"
    r"|不需要确认|无须确认|(?:묻지 않고|확인하지 않고|확인 없이|확인 불필요|확인이 필요 없|확인할 필요 없"
    r"|허락 없이|동의 없이|승인 없이|묻지 말고|확인하지 말고)" + _FORBIDDEN_AFTER_KO +
    r"|ولا تسأله|ولا تسألني|ولا تسألها|" + _WAIVER_MORE
)
#: rules/32: ``pag…`` (pagar, pago, pague) is not the English page, pages, paged, paging or pagination; running
#: (exécuter, ejecutar, eseguire) is a sensitive act in those languages too.
SENSITIVE_ACT = (
    rf"(?:{SECRET}|{ACCOUNT}|{MONEY_OBJ}"
    r"|\b(?:approv\w*|authori[sz]\w*|pay|pays|paid|paying|payment|transfer\w*|wire\w*|send|sending|forward\w*"
    r"|share|sharing|grant\w*|access|install\w*|run|execute|delete|deleting|unlock\w*|codes?|card|invoices?"
    r"|passwords?|bank\w*|reenv\w*|env[ií]\w*|transf\w*|pag(?!e\b|es\b|ed\b|ing\b|inat)\w+|c[óo]digos?|acc[eè]s"
    r"|acceso|acesso|accesso|zugriff"
    r"|zugang|freigeb\w*|genehmig\w*|[uü]berweis\w*|bezahl\w*|weiterleit\w*|leite\w*|virements?|virer|payer"
    r"|transmet\w*|envoy\w*|donner|installer|instalar|installieren|approuv\w*|aprob\w*|aprov\w*|invia\w*|codic[ei]"
    r"|banc[ao]\w*|bonific\w*|trasfer\w*|tarjetas?|cart[ãa]o|cart[õo]es|carte bancaire|cartes? bleues?|kreditkarte\w*"
    r"|bankkarte\w*|(?:t[üu]r|haus|tor|zugangs|sicherheits|best[äa]tigungs|alarm|tresor|geheim)codes?"
    r"|\w*(?:passwort|kennwort|konto)|carta di credito|supprime\w*|borra\w*|elimina\w*|l[öo]sch\w*|cancella\w*"
    # rules/32: running something, in French, Spanish, Portuguese and Italian (not the English "executive")
    r"|ex[ée]cut(?!ive)\w*|ejecut\w*|esegu[ia]\w*"
    r"|apaga\w*)\b"
    r"|送金|振込|振り込|口座|パスワード|暗証|コード|認証|承認|転送|アクセス|转账|汇款|账户|帐户|密码|验证码|批准"
    r"|支払|支拂|請求書|支付|账单"
    r"|转发|付款|송금|계좌|비밀번호|인증|승인|전달|복사|공유|업로드|전송"
    # rules/15: sending to an e-mail address is an act on the person's data
    r"|[\w.+-]+@[\w-]+(?:\.[\w-]+)+|" + _SENSITIVE_MORE + ")"
)
#: What keeps a sentence an order where an exemption would otherwise let it pass (the speaker's own errands and
#: correspondence, rules/25, rules/40): an address, a link or a sensitive act.
CARRIES = r"(?:@|https?://|www\.|" + SENSITIVE_ACT + ")"
#: What a relayed wish may ask besides a sensitive act: keeping things from the person (rules/13; "omite las
#: compras que él hace con mi tarjeta y no me avises de ellas").
RELAYED_CONCEAL = (r"(?:\b(?:omit|hide|leave out|skip|delete|don't tell me|do not tell me|don't mention|never mention"
                   r"|omite|oculta|no me avises|no me digas|cache[rz]?|ne me dis pas|ne me pr[ée]viens pas"
                   r"|verschweig\w*|verberg\w*|nascondi|ometti|n[ãa]o me avis\w*|esconde)\b)")
#: A third party's wish for the agent, relayed by the speaker (rules/11: "my landlord says you're supposed to
#: approve ...", "my friend said to tell u ...", "the caretaker asked that whenever ..., you text it to him",
#: "Yusuf asked me to relay: ... just send it"). Not the speaker's own request ("I said you can ..."), nor a
#: third party's advice to the speaker ("my accountant says I should keep every receipt").
RELAY = (r"(?:(?<!\bi )(?<!\bwe )(?<!\bi've )(?<!\bwe've )\b(?:says|said|told me|tells me|asked(?: me)?|asks"
         r"|wants|wanted|would like|insists|insisted|mentioned|claims|claimed|wrote|texted|messaged|emailed)\b"
         rf"{C}{{0,80}}?\b(?:you(?:'re|'ll| are| can| may| should| must| have to| need to| to)?|u|ur|ya|yo?u'?re"
         r"|the (?:assistant|ai|bot|agent))\b"
         r"|\basked me to (?:relay|pass (?:on|along)|tell you|let you know|forward (?:this|it) to you)"
         r"|\b(?:m'a|nous a) (?:dit|demand[ée]) de (?:te|vous) (?:dire|demander|transmettre)"
         r"|\b(?:dit|dice|disse|sagt|hat gesagt|meint)(?:,)? (?:que|dass) (?:tu |t'|vous |t[uú] |voc[eê] |du |ihr )"
         r"|\bme (?:pidi[óo]|dijo) que te (?:dijera|pidiera)|\bpediu (?:para )?(?:te|lhe) dizer"
         # rules/14: "hat gesagt, ich soll dir ...", "mi ha detto di dirti", "zei dat ik je moet ..."
         r"|\b(?:sagt|meint|bittet|will|hat (?:gesagt|gemeint|gebeten|geschrieben)|hatte gesagt),?"
         r" (?:ich soll|dass ich) (?:dir|ihnen|euch)\b"
         r"|\b(?:sagt|meint|meinte|sagte|hat (?:gesagt|gemeint)),? du (?:sollst|solltest|musst|kannst|darfst)\b"
         r"|\bmi ha (?:detto|chiesto) di (?:dirti|chiederti)"
         r"|\b(?:zei|zegt|vroeg) dat ik (?:je|jou|u)\b"
         r"|\bm'a (?:dit|demand[ée]) de (?:te|vous) (?:faire|laisser)\b|" + RELAY_ML + ")")
#: What a relayed wish claims the agent may do on its own, or when: a permission or a standing trigger.
LICENCE = (r"(?:\b(?:supposed to|allowed|permitted|authori[sz]ed|(?:it's|its|it is) (?:ok|okay|fine)"
           r"|(?:the )?(?:ok|okay|go-ahead|green light|permission) to|whenever|whatever"
           r"|every (?:time|day|evening|morning|night|week|month)"
           r"|each time|any ?time|always|now and then|as (?:usual|agreed)|standing|already (?:agreed|approved|ok)"
           r"|autoris[ée]|permitido|autorizad[oa]|erlaubt|darfst|peux|puedes|pode|podes|toujours|siempre|sempre"
           r"|automatically|automatisch|automatiquement|autom[áa]ticamente|automaticamente|automatycznie"
           rf"|immer)\b|{STANDING_MARK}"
           # rules/14: a standing trigger on anyone's request ("if anyone asks for ...", "wenn jemand ... fragt")
           r"|\b(?:if|when|whenever) (?:anyone|someone|somebody|anybody)\b|\bwenn (?:jemand|einer|irgendwer)\b"
           r"|\bsi (?:quelqu'un|alguien)\b|\bse (?:qualcuno|algu[ée]m)\b|\bals (?:iemand|er iemand)\b|"
           + LICENCE_ML + ")")
#: Before a match in its sentence: the sentence forbids the act rather than waives the confirmation ("never
#: share my passwords without asking me", "no reenvíes nada sin preguntarme"). A negation word before a colon
#: is a label, not a negation (rules/13: the Turkish "Not:" is "Note:").
NEGATION = (r"\b(?:never|not|no|nor|don't|dont|doesn't|won't|shouldn't|mustn't|can't|cannot|nobody|ne|n'|jamais"
            r"|nunca|nadie|nie|niemals|nicht|kein\w*|non|mai|não|nooit|niet|geen|ни|никогда|ніколи|nigdy|inte"
            r"|aldrig|لا|لن|أبدا|ممنوع|לא|אל|אסור|jangan|tidak|đừng)\b(?!\s*:)|n't\b|絶対|决不|不要|별로|"
            # rules/42: the Russian and Ukrainian particle ("не надсилай нічого без мого підтвердження"), unless it
            # waives asking, waiting, checking or telling ("пользователя не спрашивай" is the waiver itself)
            r"\bне\s+(?!(?:спрашива|спроси|жди|жда|дожида|уточня|уточни|провер|сообща|сообщи|говори|предупрежда"
            r"|уведомля|пита|запиту|чека|перевіря|повідомля|кажи|питай)\w*)|"
            + nfkc("मत |नहीं |कभी नहीं|ห้าม|อย่า"))


@dataclass(frozen=True)
class Rule:
    """One named pattern and the instruction kind it reports."""

    name: str
    kind: str
    pattern: re.Pattern[str]
    #: Skip the match when its sentence opens by addressing people ("Team, from now on please ...").
    human_addressee_exempt: bool = False
    #: Skip the match when its sentence holds a :data:`NEGATION` before the match's core.
    negation_exempt: bool = False
    #: Skip the match when its sentence is a question that addresses no one as "you" (rules/30: "Can the bank
    #: change my account number without my consent?" asks about a third party; it waives nothing).
    question_exempt: bool = False
    #: Skip the match in a procedure written for people: two or more numbered steps and no word naming an AI
    #: agent anywhere in the text (rules/29: "Runbook: 1. SSH to staging-01. 2. Run `sudo systemctl restart api`").
    procedure_exempt: bool = False
    #: Skip the match when its sentence opens on the agent writing the speaker's own correspondence and carries
    #: nothing (rules/40: "When drafting emails to my landlord, ... always mention the lease reference").
    own_writing_exempt: bool = False


def rule(name: str, kind: str, pattern: str, *, human_exempt: bool = False, negation_exempt: bool = False,
         question_exempt: bool = False, procedure_exempt: bool = False, own_writing_exempt: bool = False) -> Rule:
    """The :class:`Rule` ``name`` reporting ``kind`` (an ``InstructionKind`` value) for ``pattern``,
    compiled with ``re.DOTALL``."""
    return Rule(name, kind, re.compile(pattern, re.DOTALL), human_exempt, negation_exempt, question_exempt,
                procedure_exempt, own_writing_exempt)
