"""preflab.judge: run pairwise LLM judges in both orders and calibrate them against humans."""

__version__ = "0.1.0"
