"""The report's Feverfew checks and Fig. 9 panels, on hand-made frames (no Spark): each claim's
sentence says holds or does not hold as the figures given make it."""

import pandas as pd

from overlay import schema as S
from pipelines.report import gossip, gossip_figures
from pipelines.report.gossip import BUCKET, MODE, SHARE

STORED, LIVE = gossip.MODES["push-pull"], gossip.MODES["push-pull-live"]


def coverage_rows(run_id, shares_at_10, shares_at_30):
    rows = []
    for cycle, shares in ((10, shares_at_10), (30, shares_at_30)):
        for bucket, share in zip(gossip.bucket_names(), shares):
            rows.append({S.RUN_ID: run_id, S.CYCLE: cycle, BUCKET: bucket, SHARE: share})
    return rows


def summary_row(run_id, mode, failures, pub, first_complete, last):
    return {
        S.RUN_ID: run_id,
        MODE: mode,
        "failures": failures,
        S.PUB_ID: pub,
        S.SUBSCRIBERS: 50 + pub,
        "first_complete": first_complete,
        "peak_completion": last,
        "peak_cycle": 3,
        "last_completion": last,
        "paper": 18,
        S.ROUTING_RUN_ID: f"{run_id}.{mode}",
    }


def data(coverage=(), summary=(), completion=None):
    empty = pd.DataFrame()
    return gossip.GossipData(
        coverage=pd.DataFrame(list(coverage), columns=[S.RUN_ID, S.CYCLE, BUCKET, SHARE]),
        degrees=pd.DataFrame(columns=gossip.DEGREE_COLUMNS),
        matching=pd.DataFrame(columns=gossip.MATCH_COLUMNS),
        structure=empty,
        completion=completion if completion is not None else empty,
        summary=pd.DataFrame(list(summary), columns=gossip.COMPLETION_COLUMNS),
    )


def test_fig5_holds_when_larger_topics_lead_and_coverage_never_falls():
    good = coverage_rows("a", (0.1, 0.2, 0.5, 0.9, 1.0), (0.7, 0.8, 0.9, 1.0, 1.0))
    small_first = coverage_rows("b", (0.9, 0.2, 0.5, 0.9, 1.0), (0.95, 0.8, 0.9, 0.99, 1.0))
    falls = coverage_rows("c", (0.1, 0.2, 0.5, 0.9, 1.0), (0.05, 0.8, 0.9, 1.0, 1.0))
    lines = {line.split(":")[0]: line for line in gossip.checks(data(good + small_first + falls))}
    assert (
        "coverage never falls: holds" in lines["Fig. 5, a"]
        and "10%, 20%, 50%, 90%, 100% from small to large): holds" in lines["Fig. 5, a"]
    )
    assert "at cycle 30, topics of 40 or more: 100.0% covered at least" in lines["Fig. 5, a"]
    assert "from small to large): does not hold" in lines["Fig. 5, b"]
    assert "99.0% covered at least" in lines["Fig. 5, b"]
    assert "coverage never falls: does not hold" in lines["Fig. 5, c"]


def test_fig9_is_checked_per_overlay_mode_and_failures():
    rows = [
        summary_row("fb.feverfew", STORED, "mass 80% at cycle 1", 0, None, 0.8),
        summary_row("fb.feverfew", STORED, "mass 80% at cycle 1", 1, 7, 1.0),
        summary_row("fb.feverfew", LIVE, "mass 80% at cycle 1", 0, 12, 1.0),
        summary_row("fb.feverfew", LIVE, "mass 80% at cycle 1", 1, 9, 1.0),
    ]
    lines = [line for line in gossip.checks(data(summary=rows)) if line.startswith("Fig. 9")]
    assert len(lines) == 2
    assert lines[0].startswith(
        "Fig. 9, mass 80% at cycle 1 on fb.feverfew (gossip going on): completion reaches 1 "
        "for every publication: holds, by cycle 12 (paper: "
    )
    assert lines[1].startswith(
        "Fig. 9, mass 80% at cycle 1 on fb.feverfew (stored overlay): completion reaches 1 "
        "for every publication: does not hold (lowest peak 0.800) (paper: "
    )


def test_fig9_draws_one_figure_per_mode_with_a_panel_per_dissemination():
    rows = pd.DataFrame(
        [
            {
                S.ROUTING_RUN_ID: routing,
                S.RUN_ID: "fb.feverfew",
                MODE: mode,
                "failures": "substitution 1.0%",
                S.PUB_ID: pub,
                S.SUBSCRIBERS: 50,
                S.CYCLE: cycle,
                S.COMPLETION: min(1.0, 0.3 * cycle),
            }
            for routing, mode in (("s1", STORED), ("s2", STORED), ("l1", LIVE))
            for pub in (0, 1)
            for cycle in range(5)
        ]
    )
    stored = gossip_figures.completion(rows, STORED)
    live = gossip_figures.completion(rows, LIVE)
    assert len([ax for ax in stored.axes if ax.get_visible()]) == 2
    assert len([ax for ax in live.axes if ax.get_visible()]) == 1
    assert len(live.axes[0].get_lines()) == 2 and "gossip going on" in live._suptitle.get_text()
    assert gossip_figures.completion(rows[rows[MODE] == STORED], LIVE) is None
