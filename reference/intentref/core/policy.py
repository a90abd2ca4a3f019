"""The reference's decisions where the seeds are silent, as one value passed to what applies them.

Where the seeds are silent the reference decided (``spec/decisions*.md``).  A ``Policy``
holds the decisions the core and the Bridge apply while they run: the numeric limits as
plain values (D-LIM-*), and every other decision a conformance variant takes another way.
An ``Intent``, a ``Job``, a schema ``Definition`` and a Bridge are each *given* their
policy when they are built (``REFERENCE_POLICY`` unless the caller says otherwise) and
keep it; nothing here is ambient, so what a call does depends only on the objects it is
made on (``tests/spec/test_no_ambient_policy.py`` keeps it so).

The suite proves which conformance cases rest on a decision by building the reference
with another policy (``intentref.suite.conformance.variants``): every normative case must
still pass, every reference case must fail under a variant of a decision it cites.

What may live here: the frozen ``Policy`` record, whose defaults are the reference's own
decisions, each field naming the decision it holds; and ``REFERENCE_POLICY``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Final

from intentref.core import limits


@dataclass(frozen=True)
class Policy:
    """The decisions one implementation applies; every default is what the reference decided."""

    # D-DAT-001: evidence at a parent path covers every leaf below it.  False: each returned
    # leaf needs an evidence entry at its own path.
    evidence_covers_children: bool = True
    # D-COR-002: a member the contract does not name is a violation.  False: it is ignored.
    closed_candidates: bool = True
    # D-JSON-001: a repeated member name makes a candidate invalid.  False: the last one wins.
    duplicate_keys_refused: bool = True
    # D-SCH-003: every supported format is asserted.  False: formats only annotate.
    formats_asserted: bool = True
    # D-DAT-005: a schema violation of `data` is a contract violation (repairable).  False: it
    # is a business fault, DATA_EXTRACTION_FAILED with DATA_CONSTRAINT_VIOLATED at its path.
    schema_violation_is_contract_fault: bool = True
    # D-DAT-003: violated / undetermined checks add an implied issue.  False: they do not add
    # one, and the candidate's own issues are all the error carries (or a generic one).
    implied_verdict_issues: bool = True
    # D-DAT-003: the implied issue is left out where the candidate filed one at the check's
    # path.  True: every violated / undetermined check adds its issue regardless.
    verdict_issue_at_every_check: bool = False
    # D-DAT-004: a required field cannot be not_provided.  False: it may, and that is a
    # business fault (DATA_REQUIRED_MISSING).
    required_not_provided_is_contract_fault: bool = True
    # D-LIM-002 .. D-LIM-005: the numeric limits (see ``intentref.core.limits`` for their reasons).
    max_input_bytes: int = limits.MAX_INPUT_BYTES
    max_context_messages: int = limits.MAX_CONTEXT_MESSAGES
    max_context_bytes: int = limits.MAX_CONTEXT_BYTES
    max_fields_selected: int = limits.MAX_FIELDS_SELECTED
    max_candidate_bytes: int = limits.MAX_CANDIDATE_BYTES
    max_candidate_depth: int = limits.MAX_CANDIDATE_DEPTH
    max_schema_bytes: int = limits.MAX_SCHEMA_BYTES
    max_schema_depth: int = limits.MAX_SCHEMA_DEPTH
    max_schema_nodes: int = limits.MAX_SCHEMA_NODES
    max_top_level_fields: int = limits.MAX_TOP_LEVEL_FIELDS
    max_pattern_length: int = limits.MAX_PATTERN_LENGTH
    max_enum_values: int = limits.MAX_ENUM_VALUES

    # D-JSON-002: a lone surrogate in a candidate makes it invalid.  False: each one is read
    # as U+FFFD, as a JavaScript host's TextDecoder would hand the text over.
    candidate_lone_surrogates_refused: bool = True
    # D-JSON-003: an integral value beyond the safe range is refused however it is written.
    # False: only integer *literals* must be safe; 1e20 written as a double is that double.
    unsafe_integral_doubles_refused: bool = True
    # D-JSON-004: the number rules hold for every number literal of the candidate text (the
    # whole text is at fault).  False: they hold for the values inside `data` only, and the
    # fault is reported at that value's path.
    number_rules_on_every_literal: bool = True
    # D-SCH-001: `pattern` and the `regex` format follow ECMA-262 (regress).  False: Python's
    # `re` (what a plain Draft-7 validator in Python does).
    ecma_regex: bool = True
    # D-SCH-004: `$schema` takes http and https, each with or without the trailing `#`, at
    # any node.  False: only the two canonical spellings, with the `#`, and only at the root.
    any_draft7_id_spelling: bool = True
    # D-DAT-002: each returned selected field with a description needs a check at its path.
    # False: only the root description needs one (R-SRC-005); field checks are optional.
    field_descriptions_need_checks: bool = True
    # D-LIM-006: bytes a lone surrogate counts for in a UTF-8 limit (3: U+FFFD as a
    # TextEncoder writes it; variants: 1, a "?" as Python's encode(errors="replace") writes
    # it, or 6, its \uXXXX escape).
    lone_surrogate_utf8_bytes: int = 3

    # D-TXT-001: "blank" is ECMA-262 white space, as JavaScript's trim() reads it.  False: only
    # ASCII white space is blank in a core candidate's texts (an ideographic space is text).
    ecma_blank_texts: bool = True
    # --- core decisions added by later variants go above this line --------------------------
    # --- Bridge decisions (D-BRG-*) ----------------------------------------------------------
    # D-LIM-001: the capacity a BridgeConfig gets for an option it leaves out.
    default_max_jobs: int = limits.DEFAULT_MAX_JOBS
    default_max_replay_entries: int = limits.DEFAULT_MAX_REPLAY_ENTRIES
    default_max_replay_bytes: int = limits.DEFAULT_MAX_REPLAY_BYTES
    # D-BRG-014: a BridgeConfig fault names the first faulty option only.  True: every faulty
    # capacity or TTL option is listed, one issue each.
    config_faults_all_listed: bool = False
    # D-BRG-014: an integral float (3.0) is refused as an option.  True: accepted as 3.
    integral_float_options: bool = False
    # D-BRG-004, D-BRG-005: closing a session drops all its records and its calls answer
    # BRIDGE_JOB_NOT_FOUND.  True: close ends the active jobs (as a cancel would) and keeps
    # every record until it is reclaimed; the closed session still answers for them.
    closed_sessions_keep_records: bool = False
    # D-BRG-004: accept and cancel on a closed session check their parameters, then answer
    # BRIDGE_JOB_NOT_FOUND.  True: they answer BRIDGE_JOB_NOT_FOUND without any check.
    closed_calls_unchecked: bool = False
    # D-BRG-009: a refused submission (oversized, over the byte budget) is not recorded.  True:
    # its reply is kept against its token and text, and the same text on that token replays it.
    rejections_replayed: bool = False
    # D-BRG-010: a step that keeps the job active must fit exactly.  True: an upper estimate
    # must fit (the old record kept whole, plus the candidate text, plus the new task twice).
    step_budget_estimated: bool = False
    # D-BRG-011: maxReplayBytes counts only the retained content.  >0: also this many bytes of
    # bookkeeping (ids, tokens, digests' containers) for every record.
    record_overhead_bytes: int = 0
    # D-BRG-012: a prepare is judged before capacity is checked.  True: maxJobs and
    # maxReplayEntries are checked first, so a full Bridge refuses even a bad request.
    capacity_before_request: bool = False
    # D-BRG-013: terminal records are reclaimed oldest-terminated first.  True: oldest-created.
    reclaim_oldest_created: bool = False
    # D-BRG-016: a job's deadline is its prepare time + jobTtlMs, the same for all its tasks.
    # True: every new task renews it (an idle timeout) and carries the new expiresAt.
    job_ttl_per_task: bool = False
    # D-BRG-016: an expired job stays as a terminal record answering BRIDGE_JOB_EXPIRED, and
    # a job finished in time keeps its record.  True: jobTtlMs bounds the job's whole record:
    # at the deadline it is dropped, active or finished, and answers BRIDGE_JOB_NOT_FOUND.
    job_ttl_drops_record: bool = False
    # D-BRG-016: a record the replay TTL dropped answers BRIDGE_JOB_NOT_FOUND like any other.
    # True: the session that owned it is told BRIDGE_JOB_EXPIRED (a tombstone is kept).
    replay_ttl_tombstones: bool = False

    def but(self, **changes: Any) -> Policy:
        """This policy with some fields changed (unknown names raise TypeError)."""
        return dataclasses.replace(self, **changes)


REFERENCE_POLICY: Final = Policy()
