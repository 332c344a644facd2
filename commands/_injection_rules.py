"""Compiled patterns for :class:`memwarden.commands.injection.RuleBasedDetector` (rules ``rules/1``).

Every pattern runs on the NORMALISED text (NFKC, casefolded, zero-width stripped; see
``injection._normalise``). A pattern may name a ``core`` group: the finding's span is that group,
otherwise the whole match. Kinds are plain strings here to keep this module free of imports.

Building blocks: ``_IMP`` is an imperative position (start of text or clause, after optional
politeness/vocative words, or after a modal addressed to the agent: "you must", "AI agents should",
"I need you to", "remember to"). Negations ("never", "do not") are not allowed there, so negated
imperatives are data. ``_C`` is one character inside a clause (no sentence end, newline, ``;`` or
``:``); ``_S`` one character inside a sentence (may cross ``;`` and ``:``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_C = r"(?:(?!(?<!\.\.)[.!?](?:\s|$))[^\n;:])"
_S = r"(?:(?!(?<!\.\.)[.!?](?:\s|$))[^\n])"

_AGENT = (r"(?:ai|a\.i\.|assistants?|agents?|chatbots?|bots?|llms?|language models?|copilots?|summari[sz]ers?"
          r"|(?:ai|automated|reviewer|llm|virtual) (?:assistants?|agents?|models?|systems?|reviewers?|bots?|tools?)"
          r"|models?|whoever reads this)")
_PARTICIPLE = r"(?:\s+(?:reading|processing|summari[sz]ing|reviewing|parsing|seeing|using)\s+(?:this|the)(?:\s+\w+)?)"
_BOUND = (r"(?:^|(?<=[.!?;:\n,(\[{\"'>|*\u2014\u2013\u2022\]\u2190-\u2bff\U0001f000-\U0001faff])"
          r"|(?<=\band)|(?<=\bthen)|(?<=\balso)|(?<=\bet)|(?<=\by)|(?<=\bund)|(?<=\be))")
_PREFIX = (r"(?:(?:please|pls|kindly|now|then|also|just|simply|immediately|quickly|urgently|always|only|first|next"
           r"|finally|so|ok|okay|and|but|instead|silently|secretly|quietly|automatically|hey|hi|hello|dear|psst"
           r"|p\.?s\.?|note|important|urgent|reminder|step \d+|todo|ai|assistant|agent|bot|chatbot|model|llm"
           r"|por favor|bitte|s'il te pla[iî]t|from now on|going forward|in future|@\w+)\b[\s,:!.\-]*)*")
_MODAL = (r"(?:(?:you|u|tu|du|(?:the |all |any )?" + _AGENT + ")" + _PARTICIPLE + "?"
          r"\s+(?:must|should|shall|need to|needs to|have to|has to|are to|is to|will|dois|doit|devez|musst|muss"
          r"|debes|debe)(?:\s+(?:always|now|also|immediately|only|then))*"
          r"|i (?:need|want) you to|your (?:new |real |only )?(?:task|job|goal|role|mission|purpose) is (?:now )?to"
          r"|make sure (?:to|you)|remember to|be sure to|don't forget to|requires? you to"
          r"|(?:could|can|would|will) you(?: please| kindly)?"
          r"|(?:ask|tell|get|have|instruct|make) (?:the |your )?" + _AGENT + r" to"
          r"|you (?:are|'re) (?:now )?(?:allowed|authori[sz]ed|permitted|required|instructed|expected) to)")
_IMP = rf"(?:{_BOUND}\s*{_PREFIX}|\b{_MODAL}\s+{_PREFIX})"

# --- vocabularies ---------------------------------------------------------------------------------------

_MONEY_V = (r"(?:route|reroute|redirect|send|transfer|wire|pay|remit|deposit|move|settle|issue|credit|refund|forward"
            r"|switch"
            r"|vire[rz]?|verse[rz]?|envoie[rz]?|envoyez|transf[eè]re[rz]?|transf[ée]rez|paie[rz]?|payez|transfiere"
            r"|env[ií]a|manda|deposita|paga|[uü]berweise|sende|zahle|schicke)(?!\s+(?:transfers?|of)\b)")
_STRONG_MONEY_V = (r"(?:wire|remit|deposit|refund|transfer|reroute|pay|[uü]berweise|vire[rz]?|virez|transfiere)"
                   r"(?!\s+(?:transfers?|of)\b)")
_MONEY_OBJ = (r"(?:refunds?|reimbursements?|payments?|payouts?|money|funds|balance|amount|invoices?|bills?|salary"
              r"|wages|bonus(?:es)?|rent|fees?|deposit|proceeds|earnings|remboursements?|paiements?|argent|fonds"
              r"|dinero|reembolsos?|pagos?|fondos|geld|r[uü]ckerstattung(?:en)?|betrag|zahlung(?:en)?|gift ?cards?"
              r"|(?:\$|€|£|¥)\s?\d[\d,.]*|\d[\d,.]*\s?k?\s?(?:eur|euros?|usd|dollars?|gbp|pounds?|chf|btc|eth|usdt"
              r"|bitcoins?|€|\$|£)(?!\w))")
_TO = r"\b(?:to|into|on|onto|towards?|via|through|sur|vers|à|a|auf|an|en|in)\b"
_ACCOUNT = (r"(?:(?:account|acct|iban|wallet|card|paypal|sort code|beneficiary|payee|compte|cuenta|cartera|konto|bank"
            r"|escrow)\b|bc1[a-z0-9]{20,}|0x[0-9a-f]{40}|\b[a-z]{2}\d{2}(?: ?[a-z0-9]{4}){2,})")

_SECRET = (r"(?:passwords?|passwd|passcodes?|passphrases?|pins?\b|pin codes?|(?:api|openai|secret|private|access|ssh"
           r"|stripe|aws|license|licence|activation|encryption|signing|recovery) ?keys?|(?:access|session|auth|bearer"
           r"|api|refresh|personal access) ?tokens?|tokens?\b|otps?\b|one[- ]time (?:codes?|pass(?:words?|codes?))"
           r"|(?:verification|security|confirmation|mfa|2fa|backup) codes?|\d-digit codes?|2fa (?:backup )?codes?"
           r"|security (?:question )?answers?|secrets?\b|credentials?|(?:seed|recovery|mnemonic) phrases?|cvv|cvc"
           r"|card numbers?|credit card(?: numbers?| details)?|login(?! page)(?: details| credentials)?"
           r"|cookies?|environment variables|\.env\b|mots? de passe|cl[ée]s? api|contrase[ñn]as?"
           r"|c[óo]digo de verificaci[óo]n|passw[oö]rt(?:er)?|best[äa]tigungscode|zugangsdaten)")
_DISCLOSE_V = (r"(?:reveal|disclose|print|output|dump|expose|leak|list|show|display|return|read (?:out|back)|spell out"
               rf"|provide|divulge|(?:reply|respond|answer|write back)\b{_C}{{0,30}}?\bwith"
               rf"|(?:responde|contesta|r[ée]ponds|r[ée]pondez|antworte)\b{_C}{{0,30}}?\b(?:con|avec|mit)"
               r"|r[ée]v[èe]le[rz]?|affiche[rz]?|revela|muestra"
               r"|verrate|zeige)")
_GIVE_V = (r"(?:send|give|tell|share|email|e-mail|forward|text|dm|hand over|envoie[rz]?|envoyez|donne[rz]?|donnez"
           r"|env[ií]a|manda|dame|dime|gib|sende|schicke|nenne)")
_PLACE_V = (r"(?:paste|type|enter|input|include|put|copy|insert|write|fill in|submit|confirm|note|record|log"
            r"|capture|store|save)")
_DEST = (r"(?:\bme\b|\bus\b|\bhere\b|\bbelow\b|\b(?:this|the|that) (?:chat|conversation|form|field|thread|link|page"
         r"|message)\b|\byour (?:next )?(?:response|reply|answer|summary|message|output)\b|\b(?:the|every|each) "
         r"(?:next )?(?:tool )?call\b|\bthe caller\b|\bby (?:e-?mail|text|sms)\b|[\w.+-]+@[\w-]+(?:\.[\w-]+)+"
         r"|https?://|\bmoi\b|\bici\b|\baqu[ií]\b|\beste correo\b|\bmir\b|\bhier\b)")

_RUN_V = (r"(?:run|execute|exec|call|invoke|launch|trigger|use|fire|ex[ée]cute[rz]?|ejecuta|ejecutar|f[uü]hre"
          r"|starte|lance[rz]?|lancez)")
_TOOL_OBJ = (r"(?:\btools?\b|\bcommands?\b|\bshell\b|\bterminal\b|\bscripts?\b|\bfunctions?\b|\bplugins?\b"
             r"|\bextensions?\b|\bmacros?\b|\bcurl\b|\bwget\b|\bbash\b|\bzsh\b|\bsh\b|\bsudo\b|\bpowershell\b|\bcmd\b"
             r"|\bpython\b|\bnode\b|rm -rf|nc -e|\b[a-z]+_[a-z_]+\b|\b\w+\(|\bcommande\b|\bcomando\b|\bbefehl\b"
             r"|\bskript\b)")

_O_VERB = (r"(?:ignore|disregard|forget|drop|discard|abandon|dismiss|override|overrule|bypass|skip|throw away|scrap"
           r"|toss|nullify|erase"
           r"|set aside|ignorez|ignorer|oublie[rz]?|oubliez|ignora(?:r|d|te)?|olvida(?:r|d)?|ignoriere|ignorieren"
           r"|vergiss|vergessen sie|dimentica)")
_O_ART = r"(?:the|les|las|los|le|la|el|die|den|das|gli|of)"
_O_DET = (r"(?:all|a[l1i]{2}|any|every|each|your|my|these|those|its|tes|tus|sus|vos|deine|ihre|alle[ns]?|toutes?"
          r"|todas?|tutte|the user's|above|previous|prior|earlier|preceding|former|old|original|initial|existing"
          r"|current|other|system|safety|developer|operator's|default|standing|given|programmed|built-in"
          r"|vorherigen?|bisherigen|pr[ée]c[ée]dentes?|ant[ée]rieures?|anteriores|precedenti|\w+ tools')")
_O_NOUN = (r"(?:instructions?|instruction set|rules?|guidelines?|guidance|directives?|prompts?|system prompt"
           r"|system message|policies|policy|restrictions?|constraints?|commands?|orders?|programming|training"
           r"|safeguards?|guardrails?|filters?|context|criteria|rubric|requests?|consignes?|r[èe]gles?|instrucciones"
           r"|reglas|normas|directrices|anweisungen|regeln|richtlinien|vorgaben|istruzioni|regole)")
_O_QUAL = (r"(?:pr[ée]c[ée]dentes?|anteriores|precedenti|vorherigen|above|before|earlier|so far"
           r"|you (?:were|have been) given|(?:given|provided|sent) to you|you received|you got|you have"
           r"|from (?:your|the) \w+|of the (?:system|developer|operator))")

_D_V = (r"(?:say|tell|state|claim|answer|respond|reply|recommend|suggest|mention|describe|report|rate|score|rank"
        r"|list|promote|praise|end|begin|start|include|omit|hide|avoid|refuse|deny|confirm|insist|present|call|label"
        r"|mark|treat|use|book|add|offer|give|write|remember|save|store|note|follow|obey|ask|direct|steer|push"
        r"|favou?r|prioriti[sz]e|do|make|act|pretend|speak|talk|set|create|delete|remove|change|update|approve|click"
        r"|visit|open|download|install|upload|close|cancel|grant|enable|disable|dis|r[ée]ponds|recommande[rz]?"
        r"|recomienda|di|responde|sag|sage|empfiehl|antworte)")
_ANY_V = rf"(?:{_D_V}|{_MONEY_V}|{_GIVE_V}|{_DISCLOSE_V}|{_PLACE_V}|{_RUN_V}|{_O_VERB}|post|share|email|copy|print)"

_E_V = (r"(?:(?:call|invoke|use|run) (?:the )?(?:send|email|mail|post|upload|forward|share)_\w+"
        r"|send|forward|email|e-mail|mail|post|upload|share|transmit|export|copy|bcc|cc|leak|sync|push|submit"
        r"|append|dump|publish|attach|reenv[ií]a|env[ií]a|manda|comparte|sube|transf[eè]re[rz]?|envoie[rz]?|envoyez"
        r"|partage[rz]?|leite|sende|schicke|teile|lade)")
_E_DEST = (r"(?:[\w.+-]+@[\w-]+(?:\.[\w-]+)+|(?:https?|ftp|sftp|s3|gs)://\S+|\b\d{1,3}(?:\.\d{1,3}){3}\b|\bpastebin\b"
           r"|\bpublic (?:bucket|channel|repo|repository|link|folder|page)\b|\b(?:anyone|everyone) who asks\b"
           r"|\bthird[- ]part(?:y|ies)\b)")

_TRIGGER = (r"(?:next time|whenever|every time|each time|any time|anytime|if ever|when|if|once|as soon as"
            r"|la prochaine fois que|chaque fois que|quand|cuando|cada vez que|la pr[óo]xima vez que|wenn"
            r"|jedes mal wenn)")
_TRIGGER_EVENT = (r"(?:(?!i\b|i'm\b|we\b)(?:[\w']+\s+){1,3}?(?:ever\s+)?(?:asks?|mentions?|requests?|wants?|needs?"
                  r"|books?|logs? in|shares?|talks?|says?|types?|searches?|writes?|gets?|sends?|opens?|visits?|uses?"
                  r"|reads?|inquires?|enquires?|queries|brings up|is asked|are asked|arrives?|comes? in|is received"
                  r"|pregunta|demande|fragt)"
                  r"|you(?:'re| are) asked|you (?:see|read|reply|respond|process|summari[sz]e|answer|open|visit"
                  r"|encounter)|(?:summari[sz]ing|reading|processing|reviewing|answering|replying to|translating)"
                  r" (?:this|the))")
_STANDING_MARK = (r"(?:from now on|from this point (?:on|forward)|going forward|henceforth|in (?:the )?future"
                  r"(?: conversations| sessions| chats| replies)?|for all future (?:sessions|conversations|chats"
                  r"|replies|requests)|[àa] partir de maintenant|dor[ée]navant|d[ée]sormais|de ahora en adelante"
                  r"|a partir de ahora|ab jetzt|von nun an|ab sofort|d'ora in poi)")


@dataclass(frozen=True)
class Rule:
    """One named pattern and the instruction kind it reports."""

    name: str
    kind: str
    pattern: re.Pattern[str]
    #: Skip the match when its sentence opens by addressing people ("Team, from now on please ...").
    human_addressee_exempt: bool = False


def _r(name: str, kind: str, pattern: str, *, human_exempt: bool = False) -> Rule:
    return Rule(name, kind, re.compile(pattern, re.DOTALL), human_exempt)


_OVERRIDE_IGNORE = (rf"\b{_O_VERB}\s+(?:{_O_ART}\s+)*{_O_DET}\s+(?:(?:{_O_DET}|{_O_ART})\s+){{0,3}}{_O_NOUN}\b"
                    rf"|\b{_O_VERB}\s+{_O_ART}\s+{_O_NOUN}\s+{_O_QUAL}"
                    rf"|\b{_O_VERB}\s+(?:all\s+)?(?:the\s+)?(?:earlier|previous|prior|above|preceding|past)\s+"
                    r"(?:messages|conversation|context|turns)\b")

RULES: tuple[Rule, ...] = (
    # --- OVERRIDE
    _r("override.ignore", "OVERRIDE", _OVERRIDE_IGNORE),
    _r("override.forget-everything", "OVERRIDE",
       r"\b(?:forget|ignore|disregard)\s+(?:about\s+)?(?:everything|all(?: that)?|anything|whatever)\s+(?:you (?:were|"
       r"have been|'ve been) (?:told|given|instructed|taught)|(?:written |said )?(?:above|before|previously|earlier"
       r"|so far))"),
    _r("override.ignore-them", "OVERRIDE", rf"\b{_O_NOUN}\b{_S}{{0,80}}?\b{_O_VERB}\s+(?:them|it|those|these)\b"),
    _r("override.new-system", "OVERRIDE",
       r"\b(?:new|updated|revised|real|actual|true) system (?:prompt|instructions|message|rules)|\bnew system prompt"
       r"|\b(?:new|real|actual|true) instructions\s*(?::|follow|are)|\bsystem (?:prompt )?override\b"
       r"|\b(?:reveal|print|output|show|repeat|disclose|leak|display)\s+(?:\w+\s+){0,3}?(?:system prompt|initial"
       r" instructions|hidden instructions|prompt verbatim)"
       r"|\b(?:above|previous|prior|earlier|original|old|your|all|these|those|the) (?:system )?(?:instructions"
       rf"|rules|prompt|message|directives|guidelines|polic(?:y|ies))\b{_C}{{0,30}}?\b"
       r"(?:(?:are|is|were|was|has been|have been) )?(?:now )?(?:void|null|outdated|obsolete|invalid|cancell?ed"
       r"|canceled|revoked|fake|a test|wrong|no longer valid)"
       r"|\boverrides? (?:any |all |the )?(?:earlier |previous |prior "
       r"|other |existing )?instructions|\breset (?:your|all) (?:instructions|rules|guidelines|programming)"
       r"|\b(?:they|these|those|the rules|your rules|your guidelines) (?:no longer|do not|don't) apply"
       r"|\b(?:content|safety) (?:policy|policies|filters?) (?:is|are) (?:now )?(?:switched off|disabled|off"
       r"|suspended|lifted)|\bsafety checks (?:are )?disabled|\bset (?:your )?(?:policy|mode|safety) to "
       r"(?:permissive|unrestricted|off|none)"),
    _r("override.roleplay", "OVERRIDE",
       rf"\byou(?:\s+are|'re)?\s+now\b{_C}{{0,60}}?\b(?:dan|jailbroken|unrestricted|unfiltered|uncensored|evil|obedient"
       r"|no (?:rules|restrictions|limits|filters|guidelines)|without (?:any )?(?:rules|restrictions|limits|filters"
       r"|guidelines|safety)|can do anything|ignores? (?:all )?(?:rules|instructions)|admin mode|developer mode"
       r"|god mode|bot\b|work for (?:us|me)|servant|slave|answer (?:every|any|all))"
       rf"|\b(?:pretend|act|behave|role-?play)\b{_C}{{0,30}}?\b(?:ai|assistant|model|chatbot|bot|llm)\b{_C}{{0,30}}?"
       r"\b(?:without|with no|that has no|has no|that ignores|free of)\b|\byou are no longer (?:an? )?(?:assistant|ai"
       r"|chatbot|bound)|\bstay in character\b|\b(?:unrestricted|unfiltered|uncensored|jailbroken) (?:assistant"
       r"|model|ai|mode|llm|chatbot)\b|\bnever refuses?\b|\b(?:enter|enable|activate) (?:developer|dev|dan"
       r"|jailbreak|god) mode|\banswer (?:freely|without (?:any )?(?:restrictions|filters?))"),
    _r("override.bypass-safety", "OVERRIDE",
       r"\b(?:bypass|circumvent|disable|ignore|disregard|turn off|switch off)\s+(?:your |the |all |any )?(?:safety"
       r"|security|content|ethical|moderation)(?: (?:rules|filters?|policies|policy|checks|guidelines|restrictions"
       r"|guardrails|settings))?\b"),
    _r("override.do-not-follow", "OVERRIDE",
       r"\b(?:do not|don't|stop|no longer)\s+(?:follow|obey|listen to)(?:ing)?\s+(?:your|the|any|its)\s+(?:original "
       r"|previous |prior |earlier |system |operator's |developer's |own )?(?:instructions|rules|guidelines"
       r"|system prompt|programming|operator|developer)"),
    _r("override.obey-these", "OVERRIDE",
       r"\b(?:obey|follow|comply with) (?:only )?(?:the following|these (?:new )?instructions|my commands"
       r"|(?:every|all|any) (?:requests?|commands?|instructions?)|(?:what|whatever) (?:this|the) (?:page|document"
       r"|email|site|text|message) says|the ones "
       r"(?:on this page|below|here)|the instructions (?:on this page|below|in this (?:page|document|email)))"),
    # --- DIRECTIVE
    _r("directive.vocative", "DIRECTIVE",
       r"(?:^|[.!?;\n(\[{\"'>|*\u2014\u2013])\s*(?P<core>(?:(?:dear|hi|hello|hey|attention|attn|psst|p\.?s\.?)\W+)?"
       r"(?:(?:\w+\s+){0,2}(?:note|message|instructions?|reminder|directive|update|request|p\.?s\.?)\s+)?"
       r"(?:(?:to|for)\s+)?(?:(?:any|all|the|every)\s+)?@?" + _AGENT + _PARTICIPLE + r"?\s*[:,!\u2014]\s*"
       r"(?:(?:please|kindly|remember|note|important|also|from now on|going forward|in future|in your (?:next )?"
       r"(?:answer|reply|response|summary)s?)\W+)*(?:(?:when|whenever|if|next time|once|after|before|while|every time"
       rf"|each time|any time)\b{_C}{{0,80}}?,\s*)?(?:you (?:must|should|will|need to) )?(?:always |only |never |just "
       rf"|also )*{_ANY_V}\b)"),
    _r("directive.ai-header", "DIRECTIVE",
       r"\b(?:attention|attn|(?:important |urgent )?(?:note|memo|message|instructions?|reminder|directive|notice)"
       r" (?:to|for))\s+(?:(?:any|all|the|every)\s+)?" + _AGENT + _PARTICIPLE + r"?\s*[:\u2014-]"),
    _r("directive.agent-tag", "DIRECTIVE",
       r"\[(?:agent|assistant|ai|bot|llm)[ _-]?(?:instruction|note|directive|task|command)s?\]"),
    _r("directive.agent-modal", "DIRECTIVE",
       r"\b(?:(?:the|all|any|every)\s+)?" + _AGENT + _PARTICIPLE + r"?\s+(?:must|should|shall|are to|is to|need to"
       r"|needs to|have to|has to|are required to|are instructed to)\s+(?:(?:always|never|only|also|now)\s+)*"
       r"(?!be\b)\w+"),
    _r("directive.if-you-are-ai", "DIRECTIVE",
       r"\bif you(?: are|'re) an? (?:ai|llm|language model|assistant|bot|chatbot|ai model|ai assistant|automated)"),
    _r("directive.you-must", "DIRECTIVE",
       r"\b(?:you|tu|du)\s+(?:must|should|need to|have to|are to|will|dois|musst|debes)\s+(?:(?:always|never|only"
       r"|now|also)\s+)*(?:tell|say|state|claim|answer|respond|reply|recommend|suggest|mention|describe|report|rate"
       r"|promote|praise|list|end|begin|include|omit|follow|obey|mark|approve|recommander|dire|r[ée]pondre|sagen"
       rf"|empfehlen|decir|recomendar|responder)\b|\bmusst du\b{_C}{{0,40}}?\b(?:sagen|empfehlen|antworten)\b"),
    _r("directive.trigger", "DIRECTIVE",
       rf"\b(?P<core>{_TRIGGER}\s+{_TRIGGER_EVENT}\b{_C}{{0,100}}?,\s*(?:you (?:must|should|will|need to) |please "
       rf"|then |just )?(?:always |only |never |also |just )*{_ANY_V})\b", human_exempt=True),
    _r("directive.standing", "DIRECTIVE",
       rf"\b(?P<core>{_STANDING_MARK}\s*[,:]?\s*(?:you (?:must |should |will |need to |are to )?|tu dois |du musst "
       rf"|please )?(?:always |only |never |also |just )*{_ANY_V})\b", human_exempt=True),
    _r("directive.implant", "DIRECTIVE",
       r"\b(?:memori[sz]e|learn)\s+(?:this|that|the following)\s+(?:rule|instruction|directive|procedure)"
       r"|\b(?:add|save|store|write|put|keep)\s+(?:this|that|it|the following|(?:a|this|the) (?:new )?(?:rule"
       r"|instruction|note|directive))\s+(?:to|in|into)\s+your\s+(?:memory|rules|notes|instructions)"
       r"|\b(?:store|save|keep|add|record|write|commit)\s+(?:this|that|it|the following)\s+(?:as|in|to|into)\s+"
       r"(?:a\s+)?(?:your\s+)?(?:permanent|standing|persistent|long-term|core|new)?\s*(?:rule|instruction|memory"
       r"|policy|directive|procedure)|\bsave a memory that|\b(?:standing|permanent|persistent|learned|new) "
       r"(?:instruction|rule|request|order|directive)s?\b(?:\s+for\s+(?:the\s+)?" + _AGENT + r")?\s*:"
       r"|\bremember (?:this|that) (?:forever|permanently|for (?:all )?(?:future|later)(?: sessions"
       r"| conversations)?)|\bremember for (?:all )?(?:future|later)(?: sessions| conversations)?"
       r"|\bremember to (?:always|never|only)\b|\bupdate your (?:memory|rules|instructions|core memory)"),
    _r("directive.to-users", "DIRECTIVE",
       rf"{_IMP}(?P<core>(?:tell|recommend|suggest|say to|promote|advertise|push)\s+(?:to\s+)?(?:all\s+|every\s+"
       r"|any\s+|other\s+|the\s+)?(?:users?|customers?|everyone|anyone|everybody|people|visitors?|readers?"
       r"|clients?)\b)"),
    _r("directive.in-your-answer", "DIRECTIVE",
       r"\bin your (?:next )?(?:answer|reply|response|summary|output)s?\s*,?\s*(?:claim|say|state|mention|write"
       r"|include|add|insist|tell)\b"),
    _r("directive.promote", "DIRECTIVE",
       rf"{_IMP}(?P<core>(?:always\s+|only\s+)*(?:praise|promote|advertise|recommend|endorse|push)\s+(?:only\s+)?"
       r"(?:this|our|their|the advertised)\s+(?:\w+\s+)?(?:products?|sites?|website|stores?|shops?|brands?|services?"
       r"|pages?|company|apps?|offers?|casino)\b)"
       rf"|{_IMP}(?P<core2>always\s+(?:mention|recommend|say|tell|promote|suggest|answer|respond|reply|claim|describe"
       r"|praise|list)\b)"),
    # --- MONEY_ROUTING
    _r("money.route", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>{_MONEY_V}\b{_C}{{0,60}}?{_MONEY_OBJ}{_C}{{0,60}}?{_TO}{_C}{{0,40}}?{_ACCOUNT})"),
    _r("money.strong-verb", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>(?:{_STRONG_MONEY_V}\b{_C}{{0,60}}?|pay (?:it |this |them )?){_TO}{_C}{{0,40}}?{_ACCOUNT})"),
    _r("money.change-details", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>(?:update|change|replace|set|switch|modify|edit|amend|redirect)\b{_C}{{0,40}}?\b(?:payee"
       r"|beneficiary|bank|banking|payout|payment|remittance|deposit|vendor|supplier|iban)\b"
       rf"{_C}{{0,20}}?\b(?:details|account|information|info|iban|target|method|on file|to)\b)"),
    _r("money.passive", "MONEY_ROUTING",
       rf"(?P<core>{_MONEY_OBJ}\b{_C}{{0,40}}?\b(?:should|must|shall|are to|is to|needs? to|have to|has to|will) "
       r"(?:always |now |from now on )?be (?:paid|sent|routed|rerouted|redirected|transferred|wired|deposited"
       rf"|credited|remitted|refunded) (?:to|into)\b{_C}{{0,40}}?{_ACCOUNT})"),
    _r("money.arrange", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>(?:process|make|send|initiate|arrange|execute|set up|schedule|create)\b{_C}{{0,30}}?"
       rf"\b(?:wire|transfer|payment|standing order)s?\b{_C}{{0,60}}?(?:{_TO}{_C}{{0,40}}?{_ACCOUNT}"
       r"|\b(?:new|updated|following|changed|different) (?:vendor|supplier|account|beneficiary|payee)))"),
    _r("money.gift-cards", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>(?:buy|purchase|get|pay with)\b{_C}{{0,30}}?\bgift ?cards?)"),
    _r("money.stored-card", "MONEY_ROUTING",
       rf"{_IMP}(?P<core>(?:pay|book|buy|purchase|order|check ?out)\b{_C}{{0,60}}?\b(?:with|using) (?:the |their "
       r"|his |her |the user's |my |your )?(?:saved|stored|default) (?:credit |debit )?(?:card|payment method))"),
    _r("money.tool-call", "MONEY_ROUTING",
       r"\b(?:transfer|send|pay|wire|refund|payout|remit)\w*\([^)\n]*\b(?:iban|account|acct|wallet|to_account"
       r"|beneficiary)\s*="),
    # --- CREDENTIALS
    _r("credentials.disclose", "CREDENTIALS", rf"{_IMP}(?P<core>{_DISCLOSE_V}\b{_C}{{0,50}}?{_SECRET})"),
    _r("credentials.give", "CREDENTIALS", rf"{_IMP}(?P<core>{_GIVE_V}\b{_C}{{0,50}}?{_SECRET})"),
    _r("credentials.place", "CREDENTIALS",
       rf"{_IMP}(?P<core>{_PLACE_V}\b{_C}{{0,60}}?{_SECRET}(?:{_C}{{0,50}}?{_DEST}|{_S}{{0,50}}?https?://))"),
    _r("credentials.question", "CREDENTIALS",
       r"\bwhat(?:'s| is| are| was)\s+(?:the |his |her |their )?(?:[\w-]+'s )?(?:[\w-]+ ){0,2}?" + _SECRET),
    _r("credentials.need-yours", "CREDENTIALS",
       r"\b(?:i|we) (?:need|want|require) (?:your|the user's|their|his|her)\s+(?:[\w-]+\s+){0,2}?" + _SECRET),
    _r("credentials.ask-for", "CREDENTIALS",
       rf"{_IMP}(?P<core>ask (?:them|the user|users|him|her|the customer|customers|visitors)\b{_C}{{0,10}}?\bfor "
       rf"(?:their|his|her|the)\b{_C}{{0,20}}?{_SECRET})"),
    _r("credentials.secret-file", "CREDENTIALS",
       rf"{_IMP}(?P<core>(?:read|cat|open|include|send|upload|print|pass|attach|copy|post)\b{_C}{{0,40}}?"
       r"(?:~/\.ssh|id_rsa|id_ed25519|\.aws/credentials|/etc/shadow|\.env\b|\.netrc|\.npmrc|keychain))"),
    _r("credentials.phish-link", "CREDENTIALS",
       rf"\b(?:confirm|verify|validate|update|re-?enter)\s+(?:your )?{_SECRET}{_C}{{0,30}}?\b(?:at|via|using|on"
       r"|through) (?:this|the following|the|our) (?:link|page|url|form|site)"),
    _r("credentials.reset-other", "CREDENTIALS",
       rf"{_IMP}(?P<core>reset (?:the user's|their|his|her|[\w-]+'s) (?:password|pin|2fa|mfa|credentials))"),
    # --- TOOL_USE
    _r("tool.run", "TOOL_USE", rf"{_IMP}(?P<core>{_RUN_V}\b{_C}{{0,40}}?{_TOOL_OBJ})"),
    _r("tool.pipe-to-shell", "TOOL_USE",
       r"\b(?:curl|wget|iwr|invoke-webrequest)\b[^\n|]{0,200}\|\s*(?:(?:sudo\s+)?(?:ba|z|da)?sh|iex"
       r"|invoke-expression)\b"),
    _r("tool.download-run", "TOOL_USE",
       rf"{_IMP}(?P<core>(?:download|fetch|grab|get)\b{_S}{{0,80}}?(?:\b(?:and|then|&&)\s+(?:run|execute|install"
       rf"|open|launch)\b)|install\b{_S}{{0,80}}?(?:https?|ftp)://)"),
    _r("tool.grant", "TOOL_USE",
       rf"{_IMP}(?P<core>(?:grant|give|add|assign|elevate|escalate|promote|allow)\b{_C}{{0,50}}?\b(?:permissions?"
       r"|access|rights?|scopes?|roles?|privileges?|admin|administrator|root|sudo|group|owner)\b)"),
    _r("tool.granted", "TOOL_USE",
       rf"\b(?:is|are|has been|have been) (?:now )?granted\b{_C}{{0,30}}?\b(?:scopes?|access|permissions?|rights?"
       r"|roles?)|\byou (?:now )?have (?:full )?permission to|\bpre-?(?:authori[sz]ed|approved)\b|\b(?:may|can) now\b"
       rf"{_C}{{0,40}}?\bwithout (?:any )?(?:confirmation|approval|asking|review|checks?)"
       r"|\bno longer (?:need|needs|require|requires)\s+(?:\w+\s+)?(?:approval|confirmation|permission|consent)"
       r"|\b" + _AGENT + r" (?:is|are) (?:now )?(?:authori[sz]ed|allowed|permitted|cleared) to\b"
       r"|\b(?:approved|accepted|executed|paid) automatically|\bautomatically (?:approved|accepted|approve|execute"
       r"|pay)"),
    _r("tool.mode", "TOOL_USE",
       r"\b(?:enable|enter|activate|turn on|switch (?:on|to)|unlock|you are (?:now )?in|you're (?:now )?in|go into)"
       r"\s+(?:the )?(?:admin|administrator|developer|dev|god|debug|unrestricted|jailbreak|sudo|root|dan) mode"
       r"|\benable (?:the )?(?:unrestricted|unsafe|admin|developer|jailbreak)\s+\w+"),
    _r("tool.disable-safeguard", "TOOL_USE",
       rf"{_IMP}(?P<core>(?:disable|turn off|switch off|skip|bypass|remove|deactivate|suppress|stop asking for)\b"
       rf"{_C}{{0,40}}?\b(?:confirmations?|confirmation (?:prompts?|steps?|dialogs?)|approvals?|approval "
       r"(?:requirements?|steps?)|user approval|audit(?: logging| logs?| trail)?|logging|logs|write gate|gate"
       r"|two-factor|2fa|mfa|safety checks?|guardrails?|filters?|reviews?|checks|antivirus|anti-virus|firewall"
       r"|defender|endpoint protection|monitoring|call-?backs?(?: checks?)?|verification)\b)"),
    _r("tool.auto-approve", "TOOL_USE",
       rf"\bauto[-_ ]?approv\w*|\bapprove (?:all|any|every)\b{_C}{{0,30}}?\b(?:requests?|actions?|calls?"
       r"|transactions?|payments?|changes?)|\bnever ask (?:the user |me )?(?:for )?(?:confirmation|approval"
       r"|permission)"),
    _r("tool.without-consent", "TOOL_USE",
       r"\bwithout (?:asking|consulting|confirming with|checking with|notifying|telling) (?:the user|the owner"
       r"|the account holder|them)\b"),
    _r("tool.destroy", "TOOL_USE",
       rf"{_IMP}(?P<core>(?:delete|wipe|erase|destroy|purge|shred)\s+(?:all\s+)?(?:of\s+)?(?:the user's|their|his"
       rf"|her|all|every)\b{_C}{{0,30}}?\b(?:files?|folders?|director(?:y|ies)|drives?|disks?|databases?|memories"
       r"|backups?|records|accounts?|emails?|data|documents|calendar|contacts|events|photos)\b)"),
    _r("tool.argument-smuggling", "TOOL_USE",
       rf"\bpass\b{_C}{{0,40}}?\bas (?:the |an? )?['\"]?\w+['\"]? (?:argument|parameter|param|field)\b"),
    # --- EXFILTRATION
    _r("exfiltration.send-to", "EXFILTRATION", rf"{_IMP}(?P<core>{_E_V}\b{_S}{{0,120}}?{_E_DEST})"),
    _r("exfiltration.tool-recipient", "EXFILTRATION",
       r"\b(?:to|recipients?|cc|bcc)\s*=\s*['\"]?[\w.+-]+@[\w-]+(?:\.[\w-]+)+"),
    _r("exfiltration.reply-with-all", "EXFILTRATION",
       rf"{_IMP}(?P<core>(?:reply|respond|answer|write back)\b{_C}{{0,40}}?\bwith\s+(?:everything|all(?: the)? "
       r"(?:information|data|details|memories)|whatever)\s+(?:you\s+)?(?:know|remember|have|stored|store))"),
    _r("exfiltration.include-user-data", "EXFILTRATION",
       rf"{_IMP}(?P<core>(?:include|attach|add|insert|paste)\s+(?:the\s+|all\s+|every\s+)?(?:user'?s?|users'|their"
       rf"|his|her|[\w-]+'s)\b{_C}{{0,50}}?\bin(?:to)?\s+(?:your|the)\s+(?:reply|response|answer|message|email"
       r"|output)\b)"),
    _r("exfiltration.data-in-url", "EXFILTRATION",
       r"(?:!\[[^\]\n]*\]\(|<img\b[^>\n]*\bsrc\s*=\s*['\"]?)\s*(?:https?:)?//[^\s)'\"<>]*\?[^\s)'\"<>]*(?:\{|\b(?:user"
       r"|chat|conversation|history|memor|email|password|token|secret|log|data|session|cookie)\w*)"
       rf"|{_IMP}append\b{_C}{{0,80}}?\bto (?:this|the|that|a) (?:url|link|query|address bar)"),
    _r("exfiltration.export", "EXFILTRATION",
       rf"{_IMP}(?P<core>(?:export|dump|exfiltrate|leak)\s+(?:the\s+|all\s+|every\s+)*(?:user|users'?|customer"
       r"|client|employee|contact|memory|memories|personal|patient)\b)"),
    _r("exfiltration.wanted-sent", "EXFILTRATION",
       rf"\b(?:wants?|would like|should be|must be|are to be|is to be|needs? to be)\b{_C}{{0,40}}?\b(?:sent|forwarded"
       rf"|uploaded|posted|emailed|shared|exported|copied|synced)\s+to\s+{_E_DEST}"),
    _r("exfiltration.share-with-anyone", "EXFILTRATION",
       rf"\b(?:share|disclose|reveal|give out|hand out)\b{_C}{{0,60}}?\bwith (?:anyone|everyone|anybody|whoever) "
       r"(?:who|that) (?:asks|wants|requests)"),
)

#: The OVERRIDE "ignore ... instructions" pattern, also run on a leetspeak-decoded copy.
OVERRIDE_IGNORE = re.compile(_OVERRIDE_IGNORE)
#: A digit or symbol inside a word: the text may be leetspeak.
LEET_HINT = re.compile(r"[a-z][013457@$!][a-z0-9]|[013457@$][a-z]{2}")
LEET = str.maketrans("013457@$!", "oieastasi")

#: Chat-template control tokens: a finding on their own.
TEMPLATE_TOKEN = re.compile(
    r"<\|(?:im_start|im_end|system|user|assistant|endoftext|eot_id|start_header_id|end_header_id)\|>"
    r"|<<\s*/?\s*sys\s*>>|\[/?inst\]")
#: Markup regions: HIDDEN when another finding lies inside (role tags: anywhere in the text).
HIDDEN_REGIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("hidden.html-comment", re.compile(r"<!--.*?(?:-->|$)", re.DOTALL)),
    ("hidden.css", re.compile(
        r"<(\w+)\b[^>]*(?:display\s*:\s*none|visibility\s*:\s*hidden|font-size\s*:\s*0(?![.\d])|opacity\s*:\s*0"
        r"(?![.\d])|color\s*[:=]\s*['\"]?(?:white|#fff(?:fff)?\b|transparent)|\bhidden\b|aria-hidden)[^>]*>.*?"
        r"(?:</\1\s*>|$)", re.DOTALL)),
    ("hidden.meta", re.compile(r"<meta\b[^>]*>")),
    ("hidden.role-tag", re.compile(
        r"(?:^|\n)\s*#{1,4}\s*(?:system|assistant|developer)\s*:|\[(?:system|assistant|developer|sys)\]"
        r"|<\s*/?\s*(?:system|assistant|developer|sys)\s*>|(?:^|\n)\s*system\s*:")),
)
#: Standing markers: DIRECTIVE when in the same sentence as another finding.
STANDING = re.compile(
    r"\b(?:always|never again|whenever|next time|every time|each time|permanently|forever|all future"
    r"|(?:every|each) (?:day|session|email|message|request|invoice|reply|answer|time)|on each session"
    rf"|siempre|toujours|immer|{_STANDING_MARK})\b")
#: A sentence that opens by addressing people, not the agent.
HUMAN_ADDRESSEE = re.compile(
    r"\s*(?:(?:hi|hello|hey|dear)\s+)?(?:team|all|everyone|everybody|folks|guys|colleagues|people|staff|parents"
    r"|tenants?|customers?|members|friends|y'all)\b\s*[,:!\u2014-]")
#: A quoted stretch of text (straight quotes after normalisation).
QUOTED = re.compile(r"(['\"])([^'\"\n]{3,200})\1")
#: After a closing quote: the quote is talked about ("'...' is a common phrase").
MENTION_AFTER = re.compile(
    r"\s*(?:is|are|was|were)\s+(?:a|an|the|one|common|typical|classic|known|often|usually|how|what|used)\b")
#: Before an opening quote: the quote is an example ("phrases like '...'").
MENTION_BEFORE = re.compile(
    r"(?:phrases?|words?|lines?|strings?|sentences?|like|such as|called|named|e\.g\.)\s*[:,]?\s*$")
