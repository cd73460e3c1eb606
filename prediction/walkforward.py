"""Walk-forward evaluation with out-of-fold cuts over all labelled history.

For each test block, every row whose label is fully observed before the block is history.
The cut is chosen on out-of-fold scores over that whole history (contiguous time folds,
with an embargo around each fold so that no training row shares a failure or a precursor
with the fold it scores). The fold models themselves score the block, and a row alerts
when a majority of them reach the cut (`fold_vote`). Their mean would not do: averaged
scores are shrunk toward the middle, so a cut chosen on single-model scores is rarely
crossed by the mean.
Each fold model's scores, out of fold and on the block, are read as its rank among its
own out-of-fold scores (`fold_rank`): the models train on different stretches of history
and their raw scores sit on different scales, so a raw cut chosen on the pooled
out-of-fold scores is one model's scale whenever that model's fold holds the top rows,
and the others, on their own scales, rarely reach it to make a majority.
Nothing at or after the block start, and no label that resolves after it, is used.
Three validation days held about five failures, so cuts chosen there jumped from block to
block; the whole history holds all of them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from prediction.ensemble import percentile_rank
from prediction.evaluate import DAY, BlockRun, matrix
from prediction.features import HISTORY_H
from prediction.models import Threshold, choose_threshold, fit_model, scores

EMBARGO_S = 2 * DAY  # the twin's precursors start up to 48 h before a failure


@dataclass(frozen=True)
class WalkForward:
    """Where test blocks start and how the history before each is folded."""

    first_test_day: float = 13.0
    step_days: float = 4.0
    folds: int = 3
    target: float = 0.9
    # Kept by default: with the onset features a model can learn "fails later" from them.
    exclude_ambiguous: bool = False
    extra: tuple[str, ...] = ()  # methods scored and cut alone, outside the intersection
    warmup_h: float = HISTORY_H  # rows younger than this lack feature history: train only


def training_rows(t: np.ndarray, ttf: np.ndarray, horizon_s: float, exclude: bool) -> np.ndarray:
    """Return True for rows a model may train on at this horizon.

    With `exclude`, negatives whose GPU fails one to two horizons later (a 24 h window
    before a failure 24-48 h away) are left out of training: their precursor is already
    visible, so as negatives they teach a model without a sense of time to ignore it.
    Evaluation keeps them as negatives. Off by default: the onset features (how long a
    counter has moved, how much faster it moves now) let a model tell them from the
    windows that do fail within the horizon, and most false alerts were exactly those.
    """
    keep = np.ones(len(t), dtype=bool)
    if exclude:
        keep &= ~((ttf > horizon_s) & (ttf <= 2 * horizon_s))
    return keep


@dataclass
class TwoStage:
    """A high-recall filter trained at twice the horizon, then a classifier on what passes.

    Stage one (logistic regression, labels: failure within two horizons) keeps the rows
    holding `keep_recall` of its training positives; stage two (GBDT, the horizon's own
    labels) learns only there, so it spends itself on telling "fails soon" from "fails
    later" and from benign look-alikes instead of from silent healthy GPUs. Stage two
    therefore always sees the windows one to two horizons before a failure, even where
    single models leave them out (`training_rows`): they are the "fails later" it learns.
    """

    keep_recall: float = 0.95
    first: Any = None
    second: Any = None
    cut: float = 0.0

    def fit(self, x: np.ndarray, ttf: np.ndarray, horizon_s: float, seed: int = 0) -> TwoStage:
        """Fit both stages on the same rows."""
        wide = (ttf <= 2 * horizon_s).astype(np.int8)
        self.first = fit_model("logreg", x, wide, seed=seed)
        s1 = scores(self.first, x)
        self.cut = float(np.quantile(s1[wide == 1], 1 - self.keep_recall))
        passed = s1 >= self.cut
        y = (ttf[passed] <= horizon_s).astype(np.int8)
        self.second = fit_model("gbdt", x[passed], y, seed=seed)
        return self

    def score(self, x: np.ndarray) -> np.ndarray:
        """Return stage two's score where stage one passes, 0 elsewhere."""
        out = np.zeros(len(x))
        passed = scores(self.first, x) >= self.cut
        out[passed] = scores(self.second, x[passed])
        return out


def _fit_score(name: str, rows: Rows, train: np.ndarray, seed: int) -> Any:
    """Return a fitted model's scoring function."""
    if name == "two_stage":
        two = TwoStage().fit(rows.x[train], rows.ttf[train], rows.horizon_s, seed)
        return two.score
    keep = train & rows.usable
    return _Scorer(fit_model(name, rows.x[keep], rows.y[keep], seed=seed))  # type: ignore[arg-type]


@dataclass
class _Scorer:
    """A fitted single model as a scoring function (one that pickles, unlike a closure)."""

    model: Any

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        return scores(self.model, rows)


def fold_edges(start: float, end: float, folds: int) -> list[tuple[float, float]]:
    """Return `folds` contiguous [a, b) spans covering [start, end)."""
    cuts = np.linspace(start, end, folds + 1)
    return [(float(a), float(b)) for a, b in zip(cuts[:-1], cuts[1:], strict=True)]


def fold_rank(own: np.ndarray, block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return a fold model's out-of-fold and block scores as ranks among the former.

    A rank is the share of the model's own out-of-fold scores strictly below the score
    (a block score above all of them ranks 1). Ranks keep each model's order and put all
    fold models on one scale, the one the pooled out-of-fold cut is chosen on.
    """
    return percentile_rank(own, own), percentile_rank(own, block)


@dataclass(frozen=True)
class Rows:
    """The rows time folds are cut from: features, labels, times and who may train."""

    x: np.ndarray
    y: np.ndarray
    ttf: np.ndarray
    t: np.ndarray
    horizon_s: float
    usable: np.ndarray  # `training_rows`


def fold_models(
    names: Sequence[str],
    rows: Rows,
    history: np.ndarray,
    labelled: np.ndarray,
    folds: int,
    seed: int = 0,
) -> Iterator[tuple[np.ndarray, str, Any]]:
    """Yield (fold rows, model name, scoring function) for every time fold of `history`.

    Each model trains on `labelled` rows outside its fold and the embargo around it; a
    fold with no training failure is skipped.
    """
    t = rows.t
    h_t = t[history]
    for a, b in fold_edges(float(h_t.min()), float(h_t.max()) + 1, folds):
        fold = history & (t >= a) & (t < b)
        train = labelled & ((t < a - EMBARGO_S) | (t >= b + EMBARGO_S))
        if not fold.any() or rows.y[train & rows.usable].sum() == 0:
            continue
        for n in names:
            yield fold, n, _fit_score(n, rows, train, seed)


def oof_scores(
    names: Sequence[str],
    rows: Rows,
    history: np.ndarray,
    labelled: np.ndarray,
    test: np.ndarray,
    folds: int,
    seed: int = 0,
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Return each model's out-of-fold scores (NaN outside history) and its test scores.

    Folds split `history`; models train on `labelled` rows outside the fold and its
    embargo (warm-up rows, too young to be scored fairly, may still train).

    Scores are ranks (`fold_rank`), so every fold model is on one scale. Test scores come
    one row per fold model (shape folds x test rows), not averaged (`fold_vote` applies
    the cut model by model).
    """
    x = rows.x
    out: dict[str, np.ndarray] = {n: np.full(len(rows.t), np.nan) for n in names}
    on_test: dict[str, list[np.ndarray]] = {n: [] for n in names}
    for fold, n, score in fold_models(names, rows, history, labelled, folds, seed):
        own, block = fold_rank(score(x[fold]), score(x[test]))
        out[n][fold] = own
        on_test[n].append(block)
    n_test = int(test.sum())
    stacked = {n: np.vstack(v) if v else np.zeros((0, n_test)) for n, v in on_test.items()}
    return out, stacked


def fold_vote(fold_scores: np.ndarray, cut: float) -> tuple[np.ndarray, np.ndarray]:
    """Return (alerts, score) of rows scored by several fold models against one cut.

    A row alerts when a strict majority of the fold models score it at or above the cut,
    each score a rank among that model's own out-of-fold scores (`fold_rank`). The score
    (for ranking) is the median fold score: with an odd number of folds, median >= cut is
    the majority vote. No fold models: no alerts, score 0.
    """
    k = fold_scores.shape[0]
    if k == 0:
        n = fold_scores.shape[1]
        return np.zeros(n, dtype=bool), np.zeros(n)
    votes = (fold_scores >= cut).sum(axis=0)
    return 2 * votes > k, np.median(fold_scores, axis=0)


def intersect_votes(
    member_oof: list[np.ndarray], votes: list[tuple[np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """Return (alerts, score) of the members' intersection ("parallel").

    A row alerts where every member's majority vote does; its score is the lowest member
    percentile of its median fold rank (among that member's out-of-fold ranks).
    """
    alert = np.all([a for a, _ in votes], axis=0)
    pct = [percentile_rank(r, s) for r, (_, s) in zip(member_oof, votes, strict=True)]
    return alert, np.vstack(pct).min(axis=0)


def parallel_cut(
    member_oof: list[np.ndarray], y: np.ndarray, target: float
) -> tuple[Threshold, list[float]]:
    """Choose one top fraction for every member on out-of-fold scores; return member cuts."""
    pct = np.vstack([percentile_rank(s, s) for s in member_oof]).min(axis=0)
    chosen = choose_threshold(pct, y, target)
    q = chosen.value
    cuts = [float(np.quantile(s, q)) if np.isfinite(q) else np.inf for s in member_oof]
    return chosen, cuts


def walk_forward(
    frame: pd.DataFrame,
    y: np.ndarray,
    ttf: np.ndarray,
    horizon_s: float,
    names: Sequence[str],
    plan: WalkForward,
    seed: int = 0,
) -> dict[str, list[BlockRun]]:
    """Return, per method (each model and their intersection "parallel"), its test blocks."""
    x, t = matrix(frame), frame["time"].to_numpy().astype("float64")
    t0 = float(t.min())
    rows_all = Rows(
        x, y, ttf, t, horizon_s, training_rows(t, ttf, horizon_s, plan.exclude_ambiguous)
    )
    runs: dict[str, list[BlockRun]] = {n: [] for n in (*names, *plan.extra, "parallel")}
    start = t0 + plan.first_test_day * DAY
    while start <= t.max():
        history = (t + horizon_s < start) & (t >= t0 + plan.warmup_h * 3600)
        test = (t >= start) & (t < start + plan.step_days * DAY)
        oof, on_test = oof_scores(
            (*names, *plan.extra), rows_all, history, t + horizon_s < start, test, plan.folds, seed
        )
        scored = history & np.all([np.isfinite(v) for v in oof.values()], axis=0)
        day = round((start - t0) / DAY, 1)
        rows = np.flatnonzero(test)
        member_oof = []
        for n in (*names, *plan.extra):
            cut = choose_threshold(oof[n][scored], y[scored], plan.target)
            alert, s = fold_vote(on_test[n], cut.value)
            runs[n].append(BlockRun(n, day, rows, alert, s, cut))
            if n in names:
                member_oof.append(oof[n][scored])
        chosen, cuts = parallel_cut(member_oof, y[scored], plan.target)
        votes = [fold_vote(on_test[n], c) for n, c in zip(names, cuts, strict=True)]
        alert, score = intersect_votes(member_oof, votes)
        runs["parallel"].append(BlockRun("parallel", day, rows, alert, score, chosen))
        start += plan.step_days * DAY
    return runs


@dataclass
class FoldVote:
    """The walk-forward's method fit once on all labelled history, to score new windows.

    Fold models as `walk_forward` builds them before a block (same folds, embargo and
    warm-up); each keeps its own out-of-fold scores, so new rows are ranked among them
    (`fold_rank`), and the cut is chosen on the pooled out-of-fold ranks for the target
    precision. One member alerts on its majority vote (`fold_vote`); several alert where
    all their votes agree, at one common top fraction (`parallel_cut`), as "parallel".
    """

    names: tuple[str, ...] = ("logreg", "gbdt")
    target: float = 0.9
    plan: WalkForward = field(default_factory=WalkForward)
    members: dict[str, list[tuple[Any, np.ndarray]]] = field(default_factory=dict)
    member_oof: dict[str, np.ndarray] = field(default_factory=dict)
    cuts: dict[str, float] = field(default_factory=dict)
    chosen: Threshold | None = None

    def fit(
        self, x: np.ndarray, t: np.ndarray, y: np.ndarray, ttf: np.ndarray, horizon_s: float
    ) -> FoldVote:
        """Fit the fold models on rows whose labels are all known; choose the cuts."""
        history = t >= t.min() + self.plan.warmup_h * 3600
        if not history.any():
            raise ValueError(
                f"fewer than {self.plan.warmup_h:g} h of telemetry: nothing to cut out of fold"
            )
        usable = training_rows(t, ttf, horizon_s, self.plan.exclude_ambiguous)
        everything = np.ones(len(t), dtype=bool)
        oof = {n: np.full(len(t), np.nan) for n in self.names}
        self.members = {n: [] for n in self.names}
        rows = Rows(x, y, ttf, t, horizon_s, usable)
        folds = fold_models(self.names, rows, history, everything, self.plan.folds)
        for fold, n, score in folds:
            raw = score(x[fold])
            self.members[n].append((score, np.sort(raw)))
            oof[n][fold] = percentile_rank(raw, raw)
        if not all(self.members.values()):
            raise ValueError("no time fold has a failure outside it to learn from")
        scored = history & np.all([np.isfinite(v) for v in oof.values()], axis=0)
        self.member_oof = {n: oof[n][scored] for n in self.names}
        if len(self.names) == 1:
            self.chosen = choose_threshold(self.member_oof[self.names[0]], y[scored], self.target)
            self.cuts = {self.names[0]: self.chosen.value}
        else:
            members = [self.member_oof[n] for n in self.names]
            self.chosen, cuts = parallel_cut(members, y[scored], self.target)
            self.cuts = dict(zip(self.names, cuts, strict=True))
        return self

    def predict(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Return (alerts, risk) of new rows, scoring each fold model once.

        One member: its majority vote and median fold rank; several: `intersect_votes`.
        """
        votes = []
        for n in self.names:
            ranks = [percentile_rank(own, score(x)) for score, own in self.members[n]]
            votes.append(fold_vote(np.vstack(ranks), self.cuts[n]))
        if len(votes) == 1:
            return votes[0]
        return intersect_votes([self.member_oof[n] for n in self.names], votes)

    def score(self, x: np.ndarray) -> np.ndarray:
        """Return each row's risk (see `predict`)."""
        return self.predict(x)[1]

    def alerts(self, x: np.ndarray) -> np.ndarray:
        """Return the rows that alert (see `predict`)."""
        return self.predict(x)[0]


def alert_level(
    frame: pd.DataFrame,
    alert: np.ndarray,
    ttf: np.ndarray,
    horizon_s: float,
    cooldown_s: float = DAY,
    early_s: float = 7 * DAY,
) -> dict[str, Any]:
    """Return precision and recall of alerts as on-call sees them (one page per cooldown).

    A GPU's alert pages once, then stays quiet for `cooldown_s`; a page is true when the
    GPU fails within the horizon after it. `early` counts false pages whose GPU fails
    within `early_s` anyway (right GPU, too soon). Recall: failures with a page in the
    horizon before them.
    """
    node = frame["node"].astype(str).to_numpy()
    gpu = frame["gpu"].to_numpy().astype("int64")
    t = frame["time"].to_numpy().astype("float64")
    fail_at = np.round(t + ttf)  # inf where the GPU never fails
    last: dict[tuple[str, int], float] = {}
    paged: list[int] = []
    for i in np.lexsort((t, gpu, node))[alert[np.lexsort((t, gpu, node))]]:
        key = (str(node[i]), int(gpu[i]))
        if key not in last or t[i] >= last[key] + cooldown_s:
            paged.append(int(i))
            last[key] = float(t[i])
    p = np.array(paged, dtype="int64")
    true = ttf[p] <= horizon_s
    hit = ttf <= horizon_s
    failures = set(zip(node[hit], gpu[hit], fail_at[hit], strict=True))
    caught = set(zip(node[p][true], gpu[p][true], fail_at[p][true], strict=True))
    tp = int(true.sum())
    precision = tp / len(p) if len(p) else 0.0
    recall = len(caught) / len(failures) if failures else 0.0
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    early = int(((ttf[p] > horizon_s) & (ttf[p] <= early_s)).sum())
    return {
        "cooldown_h": cooldown_s / 3600 if np.isfinite(cooldown_s) else None,
        "pages": len(p),
        "true_pages": tp,
        "early_pages": early,
        "precision": round(precision, 4),
        "failure_recall": round(recall, 4),
        "f1": round(f1, 4),
    }
