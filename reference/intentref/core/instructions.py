"""Task instructions: the text that teaches a host's model to write a valid candidate (D-INS-001).

Instructions are part of every task (spec: R-RPY-002) and a host must pass them to its
model unchanged.  They restate the candidate contract in the configured language:
Chinese for ``zh*`` languages, English otherwise, and in every case the model is told to
write its free-text values in the configured language (the payload's structuredLanguage).
"""

from __future__ import annotations

from typing import Final

_CORE_EN: Final = """\
You read a user's request and describe what it asks for. Read the JSON payload: currentInput is the user's current request; context holds earlier material (each entry has a sourceId, a role and content). Answer with ONE complete JSON object that matches format.schema exactly, and nothing else (no prose, no code fence).

Members:
- normalizedInput: the current request restated clearly and completely (non-blank).
- primaryIntent: the main purpose as a short phrase, or null when there is no real action, the purpose is unclear, or several goals weigh the same.
- requirements: requirements that apply to the whole request (a total budget, a deadline, "use only the provided material"); [] when none.
- prohibitions: things the user explicitly forbids for the whole request; [] when none.
- intents: one entry per action the user actually requests, in the order the user states (or presents) them; [] when the input only states facts or constraints. Each entry:
  - action: one of query, analyze, generate, modify, delete, execute, other (use other for creating business objects); null only when the action is unclear and you ask about it.
  - target: what the action applies to, or null when unclear.
  - requirements: requirements local to this action or stage (preconditions such as "after the tests pass", optional wording such as "optional, not required"); keep AND/OR groupings intact in one entry; [] when none.
  - blockers: all four members are required:
    - clarificationReason: why the request must be clarified before it can be acted on, or null. When it is set, questions must hold at least one question; when it is null, questions must be [].
    - questions: [{"question": "...", "options": ["...", ...]}]; options may be [] when there are no clear choices.
    - confirmationReason: why the user must confirm first (for example the user asked to confirm before acting), or null.
    - conditionReason: why a stated precondition is not yet shown to hold, or null.
Several blockers may be set at once; keep every one that applies. Never invent actions, requirements or choices the user did not express. Every string you write is non-blank. Write all free text in {language}."""

_DATA_EN: Final = """\
You extract business fields from a user's request. Read the JSON payload: currentInput and context are the only material (sources: "input" for currentInput, and each context entry's sourceId); selectedSchema defines the fields to return (selectedFields lists them) and schemaReference the whole definition; checkedDefault is the already-validated understanding of the request. Answer with ONE complete JSON object with exactly these five members, and nothing else:
- data: an object holding only selected fields whose values the material supports, each valid against selectedSchema. Omit a field the material does not provide (never fill it with null, false, 0, "" or a guess); use null only when the schema allows it and the material explicitly says the value is empty. Do not convert types or insert defaults; keep exact identifiers as written (leading zeros included).
- evidence: for every returned value, {"path": "/data/<field>...", "mode": "exact" | "semantic", "sources": [{"sourceId": "...", "quote": "..."}]}. A quote is copied verbatim from the named source. exact is only for strings and the value must equal one of its quotes; use semantic for values mapped from the material (numbers, booleans, normalised text). An entry may cover a whole object or array.
- descriptionChecks: for the schema's root description (path "/data") and for each returned field that has a description: {"path", "verdict": "satisfied" | "violated" | "undetermined", "explanation", "sources"}.
- fieldResults: exactly one per selected field: {"path": "/data/<field>", "status": "extracted" | "not_provided" | "not_applicable" | "issue", "explanation"}. extracted means the field is in data; the other statuses mean it is omitted. A required field that is missing gets status issue.
- issues: business problems: {"code", "category", "path", "message"} with category business_information (codes DATA_REQUIRED_MISSING, DATA_AMBIGUOUS, DATA_CONFLICT, DATA_DEPENDENCY_MISSING) or definition (codes DATA_CARDINALITY_MISMATCH, DATA_VALUE_UNREPRESENTABLE, DATA_CONSTRAINT_VIOLATED, DATA_DESCRIPTION_UNDETERMINED); path is the field's /data path, "/data", or null. Every status issue needs a matching issue. Report missing or conflicting information as an issue instead of guessing.
Paths are JSON Pointers: in a key, write "~" as "~0" and "/" as "~1". Numbers must be finite doubles and integers within ±9007199254740991; use a string for long identifiers. Explanations and messages are non-blank and written in {language}."""

_REPAIR_EN: Final = """

REPAIR: your previous candidate for this step broke the contract. payload.repair lists each problem with a JSON Pointer into that candidate. Write the whole candidate again, corrected; never send only the changed parts."""

_CORE_ZH: Final = """\
你的任务是读取用户请求并描述其意图。请阅读 JSON payload：currentInput 是用户当前的请求；context 是先前的材料（每项含 sourceId、role 和 content）。只输出一个完全符合 format.schema 的完整 JSON 对象，不要输出其他文字或代码块。

字段：
- normalizedInput：对当前请求清晰完整的重述（不能为空白）。
- primaryIntent：主要目的的简短表述；没有实际动作、目的不明确或多个目标同等重要时为 null。
- requirements：适用于整个请求的要求（总预算、总期限、“只使用已提供材料”等）；没有时为 []。
- prohibitions：用户明确禁止且适用于整个请求的事项；没有时为 []。
- intents：用户实际请求的每个动作一项，按用户给出的先后关系（否则按呈现顺序）排列；只有事实或约束时为 []。每项：
  - action：query、analyze、generate、modify、delete、execute、other 之一（创建业务对象用 other）；只有动作不明确且需要澄清时才为 null。
  - target：动作作用的对象；不明确时为 null。
  - requirements：只属于该动作或阶段的要求（如“测试通过后”这类前提、“可选，不是必做项”这类措辞）；AND/OR 分组保持在同一条中；没有时为 []。
  - blockers：四个字段都必须给出：
    - clarificationReason：需要先澄清的原因，或 null。有值时 questions 至少一条；为 null 时 questions 必须为 []。
    - questions：[{"question": "...", "options": ["...", ...]}]；没有明确选项时 options 为 []。
    - confirmationReason：需要用户先确认的原因（例如用户要求先确认），或 null。
    - conditionReason：所述前提尚未得到证明的原因，或 null。
多个阻塞可以同时存在，全部保留。不要虚构用户没有表达的动作、要求或选择。所有字符串都不能为空白。所有说明文字使用 {language}。"""

_DATA_ZH: Final = """\
你的任务是从用户请求中提取业务字段。请阅读 JSON payload：currentInput 与 context 是唯一材料（来源 "input" 对应 currentInput，context 各项使用其 sourceId）；selectedSchema 定义要返回的字段（selectedFields 列出这些字段），schemaReference 是完整定义；checkedDefault 是已验证的默认意图。只输出一个恰好包含以下五个字段的完整 JSON 对象，不要输出其他文字：
- data：只包含材料支持的所选字段，每个值都符合 selectedSchema。材料未提供的字段直接省略（不要补 null、false、0、"" 或猜测值）；只有 Schema 允许且材料明确表示为空时才用 null。不转换类型、不插入默认值；精确编号按原样保留（包括前导零）。
- evidence：每个返回值一项：{"path": "/data/<字段>...", "mode": "exact" 或 "semantic", "sources": [{"sourceId": "...", "quote": "..."}]}。quote 必须逐字摘自所指来源。exact 只用于字符串，且值必须等于其中一条 quote；数字、布尔值或经过归一化的文字使用 semantic。一项可以覆盖整个对象或数组。
- descriptionChecks：为 Schema 的根 description（path 为 "/data"）以及每个有 description 的返回字段各给出一项：{"path", "verdict": "satisfied" | "violated" | "undetermined", "explanation", "sources"}。
- fieldResults：每个所选字段恰好一项：{"path": "/data/<字段>", "status": "extracted" | "not_provided" | "not_applicable" | "issue", "explanation"}。extracted 表示字段在 data 中，其他状态表示省略。缺失的必填字段使用 issue。
- issues：业务问题：{"code", "category", "path", "message"}；category 为 business_information（code 为 DATA_REQUIRED_MISSING、DATA_AMBIGUOUS、DATA_CONFLICT、DATA_DEPENDENCY_MISSING）或 definition（code 为 DATA_CARDINALITY_MISMATCH、DATA_VALUE_UNREPRESENTABLE、DATA_CONSTRAINT_VIOLATED、DATA_DESCRIPTION_UNDETERMINED）；path 为字段的 /data 路径、"/data" 或 null。每个 status 为 issue 的字段都要有对应问题。信息缺失或冲突时报告问题，不要猜测。
路径使用 JSON Pointer：键中的 "~" 写作 "~0"，"/" 写作 "~1"。数字必须是有限数值，整数在 ±9007199254740991 以内；长编号使用字符串。explanation 与 message 不能为空白，并使用 {language}。"""

_REPAIR_ZH: Final = """

修复：你为这一步提交的上一个候选不符合契约。payload.repair 列出了每个问题及其在该候选中的 JSON Pointer。请重新提交完整的修正候选，不要只提交改动部分。"""


def _chinese(language: str) -> bool:
    return language.lower().startswith("zh")


def task_instructions(stage: str, language: str, repair: bool) -> str:
    zh = _chinese(language)
    if stage == "core":
        text = _CORE_ZH if zh else _CORE_EN
    elif stage == "data":
        text = _DATA_ZH if zh else _DATA_EN
    else:
        raise ValueError(f"no instructions for stage {stage!r}")
    if repair:
        text += _REPAIR_ZH if zh else _REPAIR_EN
    return text.replace("{language}", language)
