"""Judge providers behind one protocol (:class:`judge.providers.base.Provider`)."""

from judge.providers.base import (
    Completion,
    JudgeRequest,
    JudgeSpec,
    LogprobsUnsupported,
    Provider,
    ProviderError,
    make_provider,
    parse_spec,
)

__all__ = ["Completion", "JudgeRequest", "JudgeSpec", "LogprobsUnsupported", "Provider", "ProviderError",
           "make_provider", "parse_spec"]
