"""The plan: what a collection run measures, and the budget that subsamples the suites
deterministically.

Each suite is put in a stratified hash order (any prefix is a spread-out sample), optionally cut
to a shard, and taken until a `--budget` is spent: seconds, shared out by suite weights against
the cost model (cudnn_bench.cost), or a count of configurations. Nothing but the configurations
themselves decides the plan, so reruns, shards and separate machines agree; a run then measures
what its stored data leave uncovered first (cudnn_bench.coverage.measure_order).
"""

from __future__ import annotations

import hashlib
import heapq
import itertools
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from .configs import Config, ConvConfig, EmbConfig, MemConfig
from .cost import CostModel
from .errors import BenchError
from .maths import MATH_DTYPE
from .suites import SUITES


@dataclass(frozen=True)
class PlanItem:
    suite: str
    config: Config
    math: str
    est_s: float
    calls: frozenset[str] | None = None  # a stored configuration's algorithms measured again (--redo); None: all

    @property
    def key(self) -> tuple[str, str, str]:
        """What a rerun looks for in the records to skip this item."""
        return (self.suite, self.config.key(), self.math)


def only_calls(item: PlanItem, calls: frozenset[str] | None, cost: CostModel) -> PlanItem:
    """A stored configuration measured again (--redo): only the calls of `calls` (None: all of
    them, the item as planned), at their estimated cost."""
    if calls is None:
        return item
    return replace(item, calls=calls, est_s=cost.config_s(item.config, item.math, calls))


@dataclass
class Plan:
    items: list[PlanItem]
    dropped: dict[str, int] = field(default_factory=dict)  # suite -> configs left out by budget or caps
    total: dict[str, int] = field(default_factory=dict)  # suite -> configs in the full suite (or shard)
    shard: Shard | None = None

    @property
    def est_s(self) -> float:
        return sum(i.est_s for i in self.items)

    def summary(self) -> str:
        lines = []
        for s in dict.fromkeys(i.suite for i in self.items) | dict.fromkeys(self.total):
            sel = [i for i in self.items if i.suite == s]
            lines.append(
                f"{s}: {len(sel)} of {self.total.get(s, len(sel))} configurations x math, "
                f"about {sum(i.est_s for i in sel) / 60:.1f} GPU minutes"
            )
        lines.append(
            f"total: {len(self.items)} configurations, about {self.est_s / 60:.1f} GPU minutes"
            + (f" (shard {self.shard}: 1 in {self.shard.count} configurations of each stratum)" if self.shard else "")
        )
        return "\n".join(lines)


@dataclass(frozen=True)
class Budget:
    """A time limit in seconds, or a number of configurations; neither means everything."""

    seconds: float | None = None
    count: int | None = None

    @classmethod
    def parse(cls, text: str | None) -> Budget:
        """'20m', '900s', '1.5h' are times; a bare whole number is a count; 'none' is no limit."""
        if text is None or str(text).strip().lower() in ("", "none", "all"):
            return cls()
        t = str(text).strip().lower()
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(s|sec|m|min|h)", t)
        if m:
            mult = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600}[m.group(2)]
            return cls(seconds=float(m.group(1)) * mult)
        if re.fullmatch(r"\d+", t):
            return cls(count=int(t))
        raise BenchError(f"--budget {text!r} is neither a time (20m, 900s, 1h) nor a count of configurations (500)")

    def share(self, fraction: float) -> Budget:
        if self.seconds is not None:
            return Budget(seconds=self.seconds * fraction)
        if self.count is not None:
            return Budget(count=max(1 if self.count > 0 else 0, round(self.count * fraction)))
        return self


def stable_hash(text: str) -> int:
    return int(hashlib.sha1(text.encode()).hexdigest()[:15], 16)


def stratum(cfg: Config) -> tuple:
    """What a subsample must spread over: the filter size and stride (they pick the kernels
    a conv algorithm uses), the batch and transposes of a GEMM, a memory-bound op's kernel."""
    if isinstance(cfg, ConvConfig):  # a gradient's direction too (the forward's strata unchanged)
        return (cfg.kh, cfg.stride_h, cfg.groups > 1) + (() if cfg.op == "conv_fwd" else (cfg.op,))
    if isinstance(cfg, MemConfig):
        return (cfg.op, cfg.fn)
    if isinstance(cfg, EmbConfig):
        return (cfg.op, cfg.bag_size > 1)
    return (cfg.batch > 1, cfg.trans)


def stratified_order(cfgs: list, salt: str = "", tier: Callable[[Config], int] | None = None) -> list:
    """Round-robin over strata, each stratum in hash order: any prefix is a spread-out sample,
    and the order never depends on anything but the configurations themselves. With `tier`,
    each tier in turn (lowest first), each one so ordered."""
    if tier is not None:
        tiers: dict[int, list] = {}
        for c in cfgs:
            tiers.setdefault(tier(c), []).append(c)
        return [c for t in sorted(tiers) for c in stratified_order(tiers[t], salt)]
    groups: dict[tuple, list] = {}
    for c in sorted(cfgs, key=lambda c: stable_hash(salt + c.key())):
        groups.setdefault(stratum(c), []).append(c)
    keys = sorted(groups, key=lambda k: stable_hash(salt + repr(k)))
    out = []
    for i in itertools.count():
        row = [groups[k][i] for k in keys if i < len(groups[k])]
        if not row:
            break
        out += row
    return out


@dataclass(frozen=True)
class Shard:
    """Slice `index` (1-based) of `count` of every suite: within each stratum, in hash order,
    the configurations at places index-1 modulo count. Each shard is itself a stratified spread
    (every stratum shares out evenly), the shards of one count are disjoint and together whole,
    and membership depends on nothing but the configurations (so separate sessions or machines
    can each take one)."""

    index: int
    count: int

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
            raise BenchError(f"--shard {text!r} is not i/n with 1 <= i <= n (e.g. 2/5)")
        return cls(int(m.group(1)), int(m.group(2)))

    def select(self, cfgs: list, salt: str = "") -> list:
        """This shard's configurations, in their given order."""
        place: dict[str, int] = {}
        seen: dict[tuple, int] = {}
        for c in sorted(cfgs, key=lambda c: stable_hash(salt + c.key())):
            k = stratum(c)
            place[c.key()] = seen.get(k, 0)
            seen[k] = place[c.key()] + 1
        return [c for c in cfgs if place[c.key()] % self.count == self.index - 1]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def select(items: list[PlanItem], budget: Budget) -> tuple[list[PlanItem], int]:
    """Take items in order until the budget is spent (skipping ones that no longer fit)."""
    if budget.count is not None:
        return items[: budget.count], max(0, len(items) - budget.count)
    if budget.seconds is None:
        return list(items), 0
    out, spent = [], 0.0
    for it in items:
        if spent + it.est_s <= budget.seconds:
            out.append(it)
            spent += it.est_s
    return out, len(items) - len(out)


def prefix(items: list[PlanItem], seconds: float) -> list[PlanItem]:
    """The items, in order, until their estimates add up to more than `seconds`: what a run
    with `--budget none --stop-after` measures (the one-shot call's grid step)."""
    out, spent = [], 0.0
    for it in items:
        spent += it.est_s
        if spent > seconds:
            break
        out.append(it)
    return out


def interleave(items: list[PlanItem], shares: Mapping[str, float] | None = None) -> list[PlanItem]:
    """Several suites' items in turns, each suite's in its own order, so that wherever a run
    stops each suite has had its share of the estimated time (`shares`, default each suite's
    `Suite.share`): the next item is the one that would end first on its suite's own clock,
    estimated seconds spent / share (a weighted fair queue; ties go to the suite given first).

    The one-shot call's grid step runs this way: in plain suite order, with `--stop-after`, the
    gradients' grid (last of three) got nothing until conv_grid and the SEER grid were whole,
    about nine calls away, while the gradients' picks lacked data most (docs/results.md)."""
    queues: dict[str, list[PlanItem]] = {}
    for it in items:
        queues.setdefault(it.suite, []).append(it)
    if len(queues) < 2:
        return list(items)
    share = {s: (shares or {}).get(s, SUITES[s].share if s in SUITES else 0.0) for s in queues}
    bad = [s for s, w in share.items() if not w > 0]
    if bad:
        raise BenchError(f"suite {bad[0]!r} has no positive share to interleave by")
    spent = dict.fromkeys(queues, 0.0)
    heap = [(q[0].est_s / share[s], rank, s) for rank, (s, q) in enumerate(queues.items())]
    heapq.heapify(heap)
    pos = dict.fromkeys(queues, 0)
    out: list[PlanItem] = []
    while heap:
        _, rank, s = heapq.heappop(heap)
        it = queues[s][pos[s]]
        out.append(it)
        spent[s] += it.est_s
        pos[s] += 1
        if pos[s] < len(queues[s]):
            heapq.heappush(heap, ((spent[s] + queues[s][pos[s]].est_s) / share[s], rank, s))
    return out


def make_plan(
    suites: list[str],
    maths: list[str],
    budget: Budget,
    cost: CostModel,
    *,
    max_call_ms: float = 250.0,
    max_bytes: int = 16 << 30,
    limit: int | None = None,
    shard: Shard | None = None,
) -> Plan:
    """The configurations to run, per suite, within the budget (shared by suite weights).

    Configurations whose fastest call is estimated above `max_call_ms`, or whose tensors need
    more than `max_bytes`, are left out (SEER kept kernels of 1 ms to 1000 ms on a Titan Xp;
    an H100 is several times faster). A suite that needs less than its share gives the rest to
    the suites after it. With a `shard`, each suite is first cut to that shard.
    """
    per_suite: dict[str, list[PlanItem]] = {}
    total: dict[str, int] = {}
    for s in suites:
        cfgs = stratified_order(SUITES[s].build(), salt=s, tier=SUITES[s].tier)
        if shard is not None:
            cfgs = shard.select(cfgs, salt=s)
        total[s] = len(cfgs) * len(maths)
        keep = []
        for c in cfgs:
            for mth in maths:
                dtype = MATH_DTYPE[mth]
                if not c.valid or sum(c.tensor_bytes(dtype).values()) > max_bytes:
                    continue
                if cost.call_s(c, mth) * 1e3 > max_call_ms:
                    continue
                keep.append(PlanItem(s, c, mth, cost.config_s(c, mth)))
        per_suite[s] = keep[:limit] if limit else keep
    weights = {s: SUITES[s].share for s in suites}
    left = budget
    items: list[PlanItem] = []
    dropped: dict[str, int] = {}
    remaining_weight = sum(weights.values())
    for s in sorted(suites, key=lambda s: sum(i.est_s for i in per_suite[s])):  # smallest need first
        frac = weights[s] / remaining_weight if remaining_weight else 1.0
        chosen, _ = select(per_suite[s], left.share(frac))
        dropped[s] = total[s] - len(chosen)
        items_s = chosen
        if left.seconds is not None:
            left = Budget(seconds=max(0.0, left.seconds - sum(i.est_s for i in items_s)))
        elif left.count is not None:
            left = Budget(count=max(0, left.count - len(items_s)))
        remaining_weight -= weights[s]
        per_suite[s] = items_s
    for s in suites:  # execution order: the order the suites were given (RUN_ORDER)
        items += per_suite[s]
    return Plan(items, dropped, total, shard)
