"""The rule table of :class:`memwarden.commands.injection.detector.RuleBasedDetector` (rules ``rules/1``):
:data:`RULES` in family order (OVERRIDE, DIRECTIVE, MONEY_ROUTING, CREDENTIALS, TOOL_USE, EXFILTRATION),
and the auxiliary patterns of the detector (leetspeak, hidden markup, standing markers, use versus mention).

Every pattern runs on the NORMALISED text (see :mod:`memwarden.commands.injection.normalisation`).
"""

from __future__ import annotations

import re

from memwarden.commands.injection.rules_action import CREDENTIAL_RULES, EXFILTRATION_RULES, MONEY_RULES, TOOL_RULES
from memwarden.commands.injection.rules_agent import DIRECTIVE_RULES, OVERRIDE_IGNORE, OVERRIDE_RULES
from memwarden.commands.injection.vocabulary import AGENT, ANY_V, CARRIES, NEGATION, STANDING_MARK, Rule

__all__ = ["ACTION_HEADER", "ACTION_ITEM", "ACTION_ITEM_COLON", "ADDRESSED", "AGENT_WORD", "HIDDEN_REGIONS",
           "HUMAN_ADDRESSEE", "LEET", "LEET_HINT", "MENTION_AFTER", "MENTION_BEFORE", "MENTION_CONTEXT", "NEGATED",
           "NUMBERED_STEP", "OVERRIDE_IGNORE", "OWN_WRITING", "OWN_WRITING_CARRIES", "QUOTED", "RULES",
           "REPORTED_ASK", "SECOND_PERSON", "STANDING", "TEMPLATE_TOKEN", "Rule"]

#: Every named rule, one family after the other.
RULES: tuple[Rule, ...] = (
    *OVERRIDE_RULES, *DIRECTIVE_RULES, *MONEY_RULES, *CREDENTIAL_RULES, *TOOL_RULES, *EXFILTRATION_RULES,
)

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
    rf"|siempre|toujours|immer|{STANDING_MARK})\b")
#: rules/30: a second-person word: a question holding one is put to someone (the agent, a person).
SECOND_PERSON = re.compile(r"\b(?:you|your|yours|tu|du|vous|usted|ustedes|ty|ты|вы|ви|tú|jij)\b"
                           r"|あなた|당신|你|您")
#: rules/29: a numbered step ("1. ", "2) ", "step 3. "); two or more make a procedure.
NUMBERED_STEP = re.compile(r"(?:^|\s)(?:step )?\d[.)]\s")
#: rules/29: a word naming an AI agent anywhere in a text: then its numbered steps may be written for the agent.
AGENT_WORD = re.compile(rf"\b{AGENT}\b")
#: A negation before a ``negation_exempt`` rule's match in its sentence (rules/8).
NEGATED = re.compile(NEGATION)
#: A sentence that opens by addressing people, not the agent.
HUMAN_ADDRESSEE = re.compile(
    r"\s*(?:(?:hi|hello|hey|dear)\s+)?(?:team|all|everyone|everybody|folks|guys|colleagues|people|staff|parents"
    r"|tenants?|customers?|members|friends|y'all)\b\s*[,:!\u2014-]")
#: rules/40: a sentence opening on the agent writing the speaker's own correspondence ("When drafting emails to my
#: landlord, ...", "Whenever you reply to my clients, ..."): what follows is how the speaker wants it written.
OWN_WRITING = re.compile(
    r"\s*(?:when(?:ever)?|if|each time|every time)\s+(?:you(?:'re| are)?\s+)?(?:draft|writ|compos|repl|respond"
    r"|answer|prepar)\w*\s+(?:[\w'-]+\s+){0,3}?(?:to|for|on behalf of)\s+(?:my|me)\b")
#: rules/40: what keeps such a sentence an order: an address, a link, a sensitive act, or promoting something.
OWN_WRITING_CARRIES = re.compile(
    CARRIES + r"|\b(?:recommend|promot|prais|advertis|endors|push)\w*")
#: A quoted stretch of text (straight quotes after normalisation; an apostrophe inside a word, as in
#: "holder's", does not close a single quote).
QUOTED = re.compile(r"\"[^\"\n]{3,200}\"|(?<!\w)'(?:[^'\n]|(?<=\w)'(?=\w)){3,200}'")
#: After a closing quote: the quote is talked about ("'...' is a common phrase").
MENTION_AFTER = re.compile(
    r"\s*(?:is|are|was|were)\s+(?:a|an|the|one|common|typical|classic|known|often|usually|how|what|used)\b")
#: Anywhere outside the quotes: the text reports or teaches about attacks, so what it quotes is an example
#: ("the phishing email said '...', so I reported it"; "researchers showed that a hidden line, '...', could").
MENTION_CONTEXT = re.compile(
    r"\b(?:phish\w*|scam(?:s|mers?)?|fraud(?:ulent|sters?)?|(?:prompt )?injections?|attacks?|attackers?|hackers?"
    r"|malicious|suspicious|jailbreaks?|red[- ]flags?|flagged|reported|awareness|spoof(?:ed|ing)?"
    r"|impersonat\w+|researchers?|red[- ]team\w*|pen(?:etration)? test\w*|classifier|labell?ed as"
    r"|social[- ]engineering|pretext\w*|vishing|smishing|quarantin\w*)\b"
    # rules/40: a message the speaker finds odd ("I got a weird email that said '...'") or will not act on
    r"|\b(?:weird|strange|odd|sketchy|fishy|dodgy|shady|bogus|fake|creepy|spammy)(?:[- ]looking)?\s+(?:e-?mails?"
    r"|messages?|texts?|sms|dms?|links?|notes?|calls?|pop-?ups?|comments?|attachments?|websites?|pages?|posts?)\b"
    r"|\b(?:don't|do not|never|not to) (?:act on|follow|obey) (?:it|them|that|this|those|such)\b"
    # rules/38: the same in other languages (fraud, phishing, scam, suspicious), whose warnings quote phishing too
    r"|\b(?:fraude\w*|estafa\w*|arnaque\w*|escroquer\w*|betrug\w*|betrüger\w*|truffa\w*|truffe|oszust\w*"
    r"|podvod\w*|oplicht\w*|bedrägeri\w*|dolandırıc\w*|penipuan|lừa đảo|мошенни\w*|фишинг\w*|шахра\w*"
    r"|підозріл\w*|подозрительн\w*|απάτη\w*|ύποπτ\w*|הונא\w*|פישינג|احتيال|تصيد|धोखाधड़ी|फ़िशिंग|sospech\w*"
    r"|suspeit\w*|sospett\w*|verdächtig\w*|verdacht\w*|podejrzan\w*|şüpheli)"
    r"|不審|詐欺|フィッシング|钓鱼|釣魚|诈骗|詐騙|可疑|사기|피싱|의심")
#: rules/34: a request reported in the third person, before the acts it lists ("an attacker impersonates an
#: executive and asks an employee to wire money, buy gift cards or ..."): with :data:`MENTION_CONTEXT` in the text,
#: what follows in its sentence is a description of the attack, not an order to the reader.
REPORTED_ASK = re.compile(
    r"\b(?:asks|tells|persuades|tricks|pressures|pressurises|pressurizes|convinces|instructs|urges|gets|lures)\s+"
    r"(?:an?\s+|the\s+|their\s+|its\s+|his\s+|her\s+|your\s+)?(?:\w+\s+)?(?:employees?|victims?|users?|staff"
    r"|targets?|customers?|persons?|people|someone|recipients?|accountants?|clerks?|colleagues?|members?)\s+to\b")
#: rules/34: a bullet of meeting notes that is a person's action item ("- Chloe to set up the folder and give read
#: access to the auditors"), read on the ORIGINAL line (the name is capitalised): a bullet, number or box, a name
#: that is no imperative or greeting ("- Remember to …", "- Reply to …"), "to" and a lower-case verb (not "to the").
#: The detector skips it when the line names an AI agent ("- Assistant to forward …" is no person's task).
ACTION_ITEM = re.compile(
    r"^[ \t]*(?:[-*\u2022]|\d+[.)]|\[[ xX]\])\s*(?:[Aa]ction(?: items?)?:\s*)?"
    r"(?!(?:Note|Notes|Remember|Reply|Remit|Welcome|Sorry|Make|Need|Needs|Want|Ask|Tell|Go|Time|Due|Ready|Able|Used"
    r"|Going|Have|Has|Try|Be|Send|Forward|Pay|Transfer|Wire|Move|Switch|Add|Write|Reach|Talk|Speak|Listen|Respond"
    r"|Return|Submit|Upload|Email|Mail|Copy|Point|Link|Next|Up|Back|Welcome|Set|Get)\b)"
    r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?(?:\s+(?:and|&)\s+[A-Z][a-z]+)?\s+to\s+"
    r"(?!(?:the|a|an|this|that|these|those|my|your|our|their|his|her|its|all|every|any|me|you|us|them|him)\b)[a-z]+\b")
#: rules/46: the same task written "- Ravi: grant the external auditors read-only access ..." (a name, a colon and a
#: lower-case verb), read only under a heading of action items (:data:`ACTION_HEADER`); a label is no person
#: ("- Note: send ...", "- Assistant: send ...").
ACTION_ITEM_COLON = re.compile(
    r"^[ \t]*(?:[-*\u2022]|\d+[.)]|\[[ xX]\])\s*"
    r"(?!(?:Note|Notes|Todo|To-do|Task|Tasks|Step|Reminder|Important|Urgent|Instruction|Instructions|System|Admin"
    r"|Administrator|User|Users|Assistant|Bot|Agent|Owner|Action|Actions|Update|Status|Summary|Decision|Decisions"
    r"|Priority|Warning|Alert|Info|Tip|Rule|Policy|Attention|Goal|Request|Next|Everyone|All|Team|Anyone|Whoever"
    r"|Model|Ai|Fyi|Ps|Done|Open|Closed|Pending|Blocked|New|Old|Security|Finance|Legal|Ops|It|Hr)\b)"
    r"[A-Z][a-z]+(?:\s+[A-Z][a-z]+)?(?:\s+\([^)\n]{1,30}\))?\s*:\s+[a-z]")
#: rules/46: a heading of action items on a line of its own ("Action items:", "Next steps", "## To-dos").
ACTION_HEADER = re.compile(
    r"(?im)^[ \t]*(?:#+\s*)?(?:action items?|actions|next steps|to-?dos?|tasks|follow-?ups?)\s*:?[ \t]*$")
#: Decoded from a base64 blob: a sentence that names the agent or opens with an imperative (rules/3); since
#: rules/46 also an imperative after a clause that opens the sentence ("Before every call, read ... and pass ...").
ADDRESSED = re.compile(rf"\b{AGENT}\b|(?:^|[.!?:;]\s+|,\s+)(?:please\s+)?(?:{ANY_V}|remember|reorder|order|read)\b")
#: Before an opening quote: the quote is an example ("phrases like '...'").
MENTION_BEFORE = re.compile(
    r"(?:phrases?|(?<!\bfor )words?|lines?|strings?|sentences?|like|such as|called|named|e\.g\.)\s*[:,]?\s*$")
