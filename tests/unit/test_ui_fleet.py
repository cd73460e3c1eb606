"""The console's fleet view at scale and its cluster filter: view models and API calls."""

from __future__ import annotations

import httpx

from tests.unit.test_ui_client import make_client
from ui.models import FleetGroup, FleetSummary, NodeHealth
from ui.viewmodel import group_bars, group_rows, state_line, state_totals, worst_nodes_first


def _summary(*groups: FleetGroup) -> FleetSummary:
    return FleetSummary(groups=list(groups), gpus=sum(g.gpus for g in groups))


def _group(name: str, cluster: str = "default", **states: int) -> FleetGroup:
    healthy = 1024 - sum(states.values())
    return FleetGroup(
        cluster=cluster,
        group=name,
        nodes=128,
        gpus=1024,
        states={"healthy": healthy, **states},
    )


def test_groups_are_listed_worst_first_with_every_state():
    rows = group_rows(_summary(_group("job-a"), _group("job-b", lost=8, suspect=2)))
    assert [r["job"] for r in rows] == ["job-b", "job-a"]
    assert rows[0]["lost"] == 8 and rows[0]["isolated"] == 0
    assert rows[0]["unhealthy_pct"] == round(100 * 10 / 1024, 1)


def test_bars_leave_healthy_gpus_out_and_name_the_cluster_when_several():
    one = group_bars(_summary(_group("job-a"), _group("job-b", lost=1)))
    assert one == [{"job": "job-b", "state": "lost", "order": 2, "gpus": 1}]
    two = group_bars(_summary(_group("job-a", "east", lost=1), _group("job-a", "west", lost=2)))
    assert sorted(b["job"] for b in two) == ["job-a · east", "job-a · west"]


def test_nodes_that_need_a_look_come_first():
    nodes = [
        NodeHealth(node="n1", state="healthy", gpus=8),
        NodeHealth(node="n2", state="suspect", gpus=8, gpus_unhealthy=1),
        NodeHealth(node="n3", state="lost", gpus=8, gpus_unhealthy=1),
    ]
    assert [r["node"] for r in worst_nodes_first(nodes)] == ["n3", "n2", "n1"]


def test_state_totals_keep_six_digit_counts_whole():
    states = {"lost": 22, "healthy": 16_350, "suspect": 12}
    assert list(state_totals(states))[:3] == ["healthy", "suspect", "lost"]
    assert ":green[**16,350**] healthy" in state_line(states)


def test_cluster_and_fleet_calls_send_the_cluster_only_when_chosen():
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        if request.url.path == "/v1/fleet/groups":
            return httpx.Response(200, json={"by": "job", "groups": [], "states": {}})
        return httpx.Response(200, json={"items": [], "next_cursor": None})

    client = make_client(handler)
    client.fleet_groups()
    client.fleet_groups("west")
    client.fleet_group_nodes("job/1", "west")
    client.incidents(cluster="west")
    client.clusters()
    assert dict(seen[0].url.params) == {"by": "job"}
    assert dict(seen[1].url.params) == {"by": "job", "cluster": "west"}
    assert seen[2].url.raw_path.startswith(b"/v1/fleet/groups/job%2F1/nodes")
    assert seen[3].url.params["cluster"] == "west"
    assert seen[4].url.path == "/v1/clusters"
