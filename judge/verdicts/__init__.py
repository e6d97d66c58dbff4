"""What a verdict is and where it comes from: rubrics (``rubrics``), reading a verdict from text or logprobs
(``parsing``) and locating it in a reply (``locate``), the input pairs and the two orders (``pairs``), the
judged-pairs table with both orders combined (``judged_pairs``), provenance (``provenance``), the verdict file
(``verdict_file``) and scores read as verdicts (``scores``, its column checks in ``score_cells``). The bottom
room of judge: it imports no other room (only :mod:`judge.stats`).

The names below load on first use.
"""

from preflab.lazy import lazy_names

_HOMES = {
    "BUILTIN": "judge.verdicts.rubrics",
    "NO_LOGPROBS": "judge.verdicts.parsing",
    "OUTCOMES": "judge.verdicts.judged_pairs",
    "Pair": "judge.verdicts.pairs",
    "PairsError": "judge.verdicts.pairs",
    "ProvenanceTally": "judge.verdicts.provenance",
    "Rubric": "judge.verdicts.rubrics",
    "RubricError": "judge.verdicts.rubrics",
    "ScoreReading": "judge.verdicts.scores",
    "Verdict": "judge.verdicts.parsing",
    "annotator_columns": "judge.verdicts.judged_pairs",
    "by_identity": "judge.verdicts.pairs",
    "column": "judge.verdicts.judged_pairs",
    "combine_order_codes": "judge.verdicts.judged_pairs",
    "combined_table": "judge.verdicts.pairs",
    "has": "judge.verdicts.judged_pairs",
    "judge_single": "judge.verdicts.judged_pairs",
    "load_pairs": "judge.verdicts.pairs",
    "load_rubric": "judge.verdicts.rubrics",
    "load_scores": "judge.verdicts.scores",
    "load_verdicts_jsonl": "judge.verdicts.verdict_file",
    "p_x_single": "judge.verdicts.judged_pairs",
    "read_verdict": "judge.verdicts.locate",
    "require_one_judge": "judge.verdicts.provenance",
    "run_columns": "judge.verdicts.provenance",
    "sampled_verdict": "judge.verdicts.parsing",
    "scores_table": "judge.verdicts.scores",
    "served_columns": "judge.verdicts.provenance",
    "swap_sides": "judge.verdicts.judged_pairs",
    "unparsable": "judge.verdicts.parsing",
    "usable": "judge.verdicts.judged_pairs",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_names(__name__, _HOMES)
