"""``rsvm-conic bench defaults``' table of peers and floors: its structure from given measurements (never times)."""

import rsvm_conic.estimators as estimators
from rsvm_conic.problems import bench_defaults as b
from rsvm_conic.problems import registry


def test_every_public_estimator_has_a_peer_and_a_named_floor():
    assert registry("BENCHMARKS")["defaults"] is b.run
    cases = b._peer_cases(quick=True)
    names = {c[0].split("(")[0] for c in cases}
    assert names == set(estimators.__all__)
    for name, data, fit, peer, peer_fit, floor, floor_fit in cases:
        assert peer and floor and callable(fit) and callable(peer_fit) and callable(floor_fit), name


def test_peer_rows_pass_on_the_peer_or_on_the_floor():
    base = dict(data="d", route="ipm", gap=1e-9, peer="SVC()", floor="f")
    rows, ok = b.peer_rows(
        [
            dict(base, name="A", time=0.05, peer_time=0.01, floor_time=0.001, iterations=14),  # 5x the peer: pass
            dict(base, name="B", time=1.0, peer_time=0.01, floor_time=0.8),  # 100x the peer, 1.25x the floor: pass
            dict(base, name="C", time=1.0, peer_time=0.01, floor_time=0.5),  # 100x, 2x: miss
        ]
    )
    body = [r.split("|")[1:-1] for r in rows[2:]]
    assert len(rows[0].split("|")) - 2 == 11 and all(len(r) == 11 for r in body)
    assert [r[-1].strip() for r in body] == ["pass", "pass", "miss"] and not ok
    assert [r[6].strip() for r in body] == ["5.0", "100.0", "100.0"]
    assert [r[9].strip() for r in body] == ["50.00", "1.25", "2.00"]
    assert [r[3].strip() for r in body] == ["ipm (14 it), 1.0e-09", "ipm, 1.0e-09", "ipm, 1.0e-09"]  # the route's
