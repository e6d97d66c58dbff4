"""Scoring for the preflab_capitals task: is the capital named in the answer (case-insensitive)?"""


def process_results(doc, results):
    answer = results[0].strip().lower()
    return {"acc": float(doc["capital"].lower() in answer),
            "exact_match": float(answer.rstrip(".") == doc["capital"].lower())}
