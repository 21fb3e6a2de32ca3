"""What the response cache and the cost cap save and hold, on 1,000 items against a local fake endpoint.

    .venv/bin/python bench/judge_cost_bench.py [--items 1000] [--concurrency 16] [--latency 0.02]

1. paid: judge A calls every item (``tests/fake_judge.py``, in-process).
2. cached: judge B, same template, model, endpoint and parameters: every request is served from A's calls.
   Target: ≤ 2 s and 0 calls to the endpoint.
3. capped: judge C with ``--no-cache`` and a cap of a third of the paid run's real cost, at the concurrency
   given. Target: the real spend (from the tokens the endpoint reported) ≤ cap + the cost of one call.
4. long answers: answers of ``--reply-tokens`` (2,000) tokens under a cap of ``--long-cap`` (0.10) at
   concurrency 16, 4 and 1, with no ``max_tokens`` given (the cap sends its default bound). Target at each:
   spend ≤ cap + one call's output at the bound it sent.

Not part of the test suite.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from bench_django import django_on_fresh_sqlite

ROOT = Path(__file__).resolve().parent.parent
DB = Path("/tmp/judge_cost_bench.sqlite3")
PRICE_IN, PRICE_OUT = 2.5, 10.0  # per million tokens


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.02)
    parser.add_argument("--reply-tokens", type=int, default=2000)
    parser.add_argument("--long-cap", type=float, default=0.10)
    args = parser.parse_args()
    django_on_fresh_sqlite(DB)
    from django.core.management import call_command

    from annotator.judges.engine.progress import Prices
    from annotator.judges.engine.runner import judge_run
    from annotator.judges.engine.templates import load_template
    from annotator.judges.providers import client_for
    from annotator.models import Batch, Item, JudgeCall
    from hcs.rubric import Rubric
    from tests.fake_judge import FakeJudge

    call_command("migrate", verbosity=0)
    template = load_template("hub_answer_correctness")
    batch = Batch.objects.create(name="cost", rubric=Rubric.default().to_dict(), k=3)
    Item.objects.bulk_create(
        Item(
            batch=batch,
            item_id=f"cost-{n}",
            position=n,
            prompt=f"Question {n}: how far to the coast?",
            response=f"About {n} km.",
        )
        for n in range(args.items)
    )
    prices = Prices(PRICE_IN, PRICE_OUT)

    def cost(calls) -> float:
        return sum(((c.tokens_in or 0) * PRICE_IN + (c.tokens_out or 0) * PRICE_OUT) / 1e6 for c in calls)

    def run(fake, name, **options):
        client = client_for({"base_url": fake.url, "model": "bench", "max_tokens": 40, "backoff": 0.05})
        started = time.perf_counter()
        try:
            result = judge_run(
                batch=batch,
                template=template,
                client=client,
                judge_name=name,
                concurrency=args.concurrency,
                prices=prices,
                **options,
            )
        finally:
            client.close()
        return result, time.perf_counter() - started

    with FakeJudge(latency=args.latency) as fake:
        paid, paid_s = run(fake, "A")
        paid_calls = fake.calls
        cached, cached_s = run(fake, "B")
        cached_calls = fake.calls - paid_calls
        a_calls = list(JudgeCall.objects.filter(judge__name="A"))
        full_cost = cost(a_calls)
        one_call = max(
            ((c.tokens_in or 0) * PRICE_IN + (c.tokens_out or 0) * PRICE_OUT) / 1e6 for c in a_calls
        )
        cap = full_cost / 3
        before = fake.calls
        capped, capped_s = run(fake, "C", cache=False, max_cost=cap)
        capped_calls = fake.calls - before
    spent = cost(JudgeCall.objects.filter(judge__name="C"))
    print(
        f"{args.items} items, concurrency {args.concurrency}, {args.latency * 1000:.0f} ms a call, "
        f"prices {PRICE_IN}/{PRICE_OUT} per million tokens"
    )
    print(
        f"paid run:   {paid_calls} calls in {paid_s:.2f} s, cost {full_cost:.6f} ({paid.progress.summary()})"
    )
    print(
        f"cached run: {cached_calls} calls in {cached_s:.2f} s ({cached.progress.cached} served from the cache)"
    )
    print(
        f"capped run: cap {cap:.6f}, {capped_calls} calls in {capped_s:.2f} s, real spend {spent:.6f}, one call "
        f"at most {one_call:.6f}; over the cap by {max(0.0, spent - cap):.6f}, under it by {max(0.0, cap - spent):.6f}; "
        f"stopped at the cap: {capped.capped}"
    )
    ok = (
        cached_s <= 2.0
        and cached_calls == 0
        and cached.progress.cached == args.items
        and spent <= cap + one_call
        and capped.capped
    )
    long_reply = '{"score": 0.75, "reason": "' + "x" * (args.reply_tokens * 4 - 30) + '"}'
    for concurrency in (16, 4, 1):
        name = f"L{concurrency}"
        with FakeJudge(reply=lambda prompt: long_reply, latency=args.latency) as fake:
            client = client_for({"base_url": fake.url, "model": "bench-long", "backoff": 0.05})
            try:
                long_run = judge_run(
                    batch=batch,
                    template=template,
                    client=client,
                    judge_name=name,
                    concurrency=concurrency,
                    prices=prices,
                    cache=False,
                    max_cost=args.long_cap,
                )
            finally:
                client.close()
            bound = max((r["body"].get("max_tokens") or 0) for r in fake.requests) or None
        calls = list(JudgeCall.objects.filter(judge__name=name))
        spent = cost(calls)
        over = (bound or args.reply_tokens) * PRICE_OUT / 1e6
        print(
            f"long answers (~{args.reply_tokens:,} tokens), cap {args.long_cap:g}, concurrency {concurrency}: "
            f"{len(calls)} calls, real spend {spent:.6f}, max_tokens sent {bound}; target ≤ {args.long_cap + over:.6f}; "
            f"stopped at the cap: {long_run.capped}"
        )
        ok = ok and spent <= args.long_cap + over
    print("targets met" if ok else "TARGETS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
