"""Top p without sorting the vocabulary: exact, from the best k logits, as a vLLM logits processor.

vLLM's sampler applies a top p < 1 by sorting the whole vocabulary of every sequence at every step: for this
model's 103,424 tokens that was 59% of the CPU engine core at 8 chats (docs/benchmarks.md, "The sampler").
The mass of the best few tokens usually reaches p already, and then the sort has nothing to tell: the kept set
is a prefix of the best k logits, found from their probabilities (normalised over the whole vocabulary, one
log-sum-exp) and the mass above each. Only a row whose best `WIDTHS[-1]` logits do not hold p is sorted, the
way vLLM sorts it.

The result equals vLLM's own top p: the same tokens kept, so the same probabilities. Where several tokens share
the boundary logit and only some of them fit, as many are kept as vLLM keeps; which of those equal tokens is
the order of vLLM's sort (an unstable one) there and of `topk` here. A boundary decision can differ only where
the mass above a token is within float32 rounding of p, where vLLM's own answer depends on its summation order.

How it runs: a request's top p is handed to vLLM as 1 (so vLLM never sorts) and travels in
`SamplingParams.extra_args[KEY]` to `TopPOverBestK`, an argmax-invariant logits processor, which vLLM applies
after the temperature (so the cut is made on logits / T, as vLLM's own) and after min p, before its top k, as its
own top p would be. `hand_over` makes that change to a request's parameters, for the chats (engine/requests.py) and
the API (engine/openai_app.py's client); only where the engine was built with the processor (presets.engine_kwargs),
only for sampled requests without a top k (vLLM applies top p after top k: those keep vLLM's path).

Only CPU engines get it (presets.engine_kwargs). On the H200 the sort is cheap (0.14-0.59 ms for 1-32 rows
of 103,424 logits) and this was slower (0.33-1.27 ms: more kernels, and host syncs where it decides which rows
are held); on one core of the CPU the sort took 10-13 ms a row and this 0.4-0.65 ms where the best 64 hold p
(docs/benchmarks.md, "The sampler").

The mask itself (`mask_top_p`) needs torch only; the processor class is made when vLLM first asks for it (by
`PROCESSOR`, in the engine core, forked or spawned), so importing this module does not import vLLM.
"""

import torch

KEY = "top_p"  # SamplingParams.extra_args[KEY]: the request's real top p, read by the processor
PROCESSOR = "engine.top_p:TopPOverBestK"  # the name vLLM's engine arguments take (`logits_processors`)
WIDTHS = (64, 1024)  # the best logits looked at, widened for rows whose mass they do not hold
GREEDY_BELOW = 1e-5  # vLLM's temperature under which a request is greedy (top p then means nothing)


def mask_top_p(logits: torch.Tensor, top_p, widths=WIDTHS) -> torch.Tensor:
    """Set to -inf, in place, what vLLM's top p drops from each row of `logits` ([rows, vocab], float32,
    already divided by the temperature); `top_p` is one float per row, rows with 1 are left as they are."""
    pending = [row for row, p in enumerate(top_p) if p < 1]
    if not pending:
        return logits
    every = len(pending) == logits.shape[0]  # the usual batch: no rows to pick out
    rows = torch.tensor(pending, device=logits.device)
    x = logits if every else logits[rows]
    p = torch.tensor([top_p[row] for row in pending], dtype=torch.float32, device=logits.device)
    log_total = torch.logsumexp(x, dim=-1, keepdim=True)
    for stage, width in enumerate(widths):
        if width >= x.shape[1]:
            break
        best, order = x.topk(width, dim=-1)  # descending
        probs = (best - log_total).exp()
        keep = _kept_of_best(probs, p)
        held = ~keep[:, -1]  # the cut falls among them
        if every and held.all():
            return logits.fill_(float("-inf")).scatter_(1, order, best.masked_fill(~keep, float("-inf")))
        every = False
        if held.any():
            kept = best[held].masked_fill(~keep[held], float("-inf"))
            logits[rows[held]] = torch.full_like(x[held], float("-inf")).scatter_(1, order[held], kept)
        if held.all():
            return logits
        rows, x, p, log_total, probs = rows[~held], x[~held], p[~held], log_total[~held], probs[~held]
        # the most a wider look can hold: these, and each further token at most as likely as the last of them
        wider = widths[stage + 1] if stage + 1 < len(widths) else x.shape[1]
        if (probs.sum(dim=-1) + (wider - width) * probs[:, -1] < p).all():
            break
    logits[rows] = _by_sort(x, p)
    return logits


def _kept_of_best(probs: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """Which of a row's best tokens (`probs` descending; of equal ones, in topk's order) top p keeps: those
    with less than p of the mass above them, a prefix never empty."""
    above = torch.nn.functional.pad(probs.cumsum(dim=-1)[:, :-1], (1, 0))
    return above < p.unsqueeze(1)


def _by_sort(x: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """The full sort, as vLLM's sampler does it: ascending, a token dropped when the mass at or below it is
    at most 1 - p, the best always kept."""
    ordered, order = x.sort(dim=-1)
    drop = ordered.softmax(dim=-1).cumsum(dim=-1) <= 1 - p.unsqueeze(1)
    drop[:, -1] = False
    return x.masked_fill(torch.zeros_like(drop).scatter_(1, order, drop), float("-inf"))


def serves(llm) -> bool:
    """Whether `llm` (vLLM's engine client) was built with the processor."""
    model_config = getattr(llm, "model_config", None)
    return PROCESSOR in (getattr(model_config, "logits_processors", None) or ())


def hand_over(params, llm):
    """`params` (vLLM's SamplingParams) with its top p moved to the processor, where `llm` runs it and the
    request samples with a top p and no top k; otherwise `params` as they are."""
    if (serves(llm) and params.top_p < 1 and params.temperature >= GREEDY_BELOW
            and params.top_k in (0, -1)):
        params.extra_args = {**(params.extra_args or {}), KEY: params.top_p}
        params.top_p = 1.0
    return params


def _processor_class():
    from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor, MoveDirectionality

    class TopPOverBestK(LogitsProcessor):
        """The top p of each request that carries one in `extra_args[KEY]`, by `mask_top_p`."""

        def __init__(self, vllm_config, device, is_pin_memory):
            self.top_p: dict[int, float] = {}  # batch row -> the request's top p

        def is_argmax_invariant(self) -> bool:
            return True  # the best token is always kept: vLLM applies it after the temperature, never greedy

        def update_state(self, batch_update: BatchUpdate | None) -> None:
            if batch_update is None:
                return
            for row in batch_update.removed:
                self.top_p.pop(row, None)
            for added in batch_update.added:
                row, params = added[0], added[1]
                p = (getattr(params, "extra_args", None) or {}).get(KEY)
                if p is None:
                    self.top_p.pop(row, None)
                else:
                    self.top_p[row] = float(p)
            for a, b, direction in batch_update.moved:
                p_a, p_b = self.top_p.pop(a, None), self.top_p.pop(b, None)
                if p_a is not None:
                    self.top_p[b] = p_a
                if direction == MoveDirectionality.SWAP and p_b is not None:
                    self.top_p[a] = p_b

        def apply(self, logits: torch.Tensor) -> torch.Tensor:
            if not self.top_p:
                return logits
            return mask_top_p(logits, [self.top_p.get(row, 1.0) for row in range(logits.shape[0])])

    TopPOverBestK.__module__, TopPOverBestK.__qualname__ = __name__, "TopPOverBestK"
    return TopPOverBestK


def __getattr__(name):
    if name == "TopPOverBestK":
        globals()[name] = _processor_class()
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
