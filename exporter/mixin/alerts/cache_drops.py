"""Group ``llm-savings.alerts.cache``: a cache that used to save stops saving.

Both alerts compare a hit rate over the last hour with the same rate over the
day before that hour (``offset 1h``): a drop against the cache's own recent
level, not a fixed threshold that fits one workload. A traffic guard keeps a
quiet hour from firing.
"""

from __future__ import annotations

from exporter.mixin.config import Values
from exporter.mixin.model import Alert, Group, fill

_HITS = "rate(llm_savings_response_cache_hits_total{%(jobSelector)s}[%(window)s]%(offset)s)"
_CALLS = "rate(llm_savings_requests_total{%(jobSelector)s}[%(window)s]%(offset)s)"

RESPONSE_RATE = """\
sum by (%(clusterLabel)s, model) (HITS)
/
(
    sum by (%(clusterLabel)s, model) (HITS)
  + (sum by (%(clusterLabel)s, model) (CALLS) or sum by (%(clusterLabel)s, model) (HITS) * 0)
)""".replace("HITS", _HITS).replace("CALLS", _CALLS)

RESPONSE_DROP = """\
(
  RECENT
)
< %(responseCacheHitRateDropFraction)s *
(
  BEFORE
)
and on (%(clusterLabel)s, model)
(
    sum by (%(clusterLabel)s, model) (increase(llm_savings_response_cache_hits_total{%(jobSelector)s}[1h]))
  + (sum by (%(clusterLabel)s, model) (increase(llm_savings_requests_total{%(jobSelector)s}[1h]))
     or sum by (%(clusterLabel)s, model) (increase(llm_savings_response_cache_hits_total{%(jobSelector)s}[1h])) * 0)
  >= %(responseCacheMinRequests)s
)"""

_READ = ('rate(llm_savings_prompt_tokens_total{%(jobSelector)s, tier="cache_read"}[%(window)s]%(offset)s)')
_ALL = ('rate(llm_savings_prompt_tokens_total{%(jobSelector)s, '
        'tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}[%(window)s]%(offset)s)')

PROMPT_RATE = """\
(sum by (%(clusterLabel)s, model) (READ) or sum by (%(clusterLabel)s, model) (ALL) * 0)
/
(sum by (%(clusterLabel)s, model) (ALL) > 0)""".replace("READ", _READ).replace("ALL", _ALL)

PROMPT_DROP = """\
(
  RECENT
)
< %(promptCacheHitRateDropFraction)s *
(
  BEFORE
)
and on (%(clusterLabel)s, model)
(
  sum by (%(clusterLabel)s, model) (
    increase(
      llm_savings_prompt_tokens_total{%(jobSelector)s, tier=~"fresh|cache_read|cache_write_5m|cache_write_1h"}[1h]
    )
  ) >= %(promptCacheMinPromptTokens)s
)"""


def _indent(text: str) -> str:
    return text.replace("\n", "\n  ")


def _drop(template: str, rate: str, cfg: Values) -> str:
    recent = fill(rate, {**cfg, "window": "1h", "offset": ""})
    before = fill(rate, {**cfg, "window": "1d", "offset": " offset 1h"})
    return fill(template.replace("RECENT", _indent(recent)).replace("BEFORE", _indent(before)), cfg)


def group(cfg: Values) -> Group:
    return Group("llm-savings.alerts.cache", (
        Alert(
            "LlmSavingsResponseCacheHitRateDrop", _drop(RESPONSE_DROP, RESPONSE_RATE, cfg),
            cfg["responseCacheHitRateDropFor"], "warning",
            "The response-cache hit rate of {{ $labels.model }} fell to {{ $value | humanizePercentage }}",
            fill("Over the last hour the gateway answered fewer requests for {{ $labels.model }} from its own "
                 "response cache than %(responseCacheHitRateDropFraction)s times its rate over the day before "
                 "(hits / (hits + provider calls)). Every lost hit is a provider call paid in full.", cfg),
            "Hit rate over 1h below a fraction of the rate over the previous day,\n"
            "with at least responseCacheMinRequests requests (hits + calls) in the hour.",
        ),
        Alert(
            "LlmSavingsPromptCacheHitRateDrop", _drop(PROMPT_DROP, PROMPT_RATE, cfg),
            cfg["promptCacheHitRateDropFor"], "warning",
            "The provider prompt-cache hit rate of {{ $labels.model }} fell to {{ $value | humanizePercentage }}",
            fill("Over the last hour the share of {{ $labels.model }}'s prompt tokens read from the provider's "
                 "cache fell below %(promptCacheHitRateDropFraction)s times its share over the day before. The "
                 "usual cause is a changed prompt prefix (a system prompt edit, a timestamp or id placed early): "
                 "every request then pays the full input rate and cache writes again.", cfg),
            "cache_read share of prompt tokens over 1h below a fraction of the share\n"
            "over the previous day, with at least promptCacheMinPromptTokens in the hour:\n"
            "the commonest silent cost regression.",
        ),
    ))
