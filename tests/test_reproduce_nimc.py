"""`contend reproduce nimc --quick`: Groves 2016's findings reappear in shape, with the report's files."""

from __future__ import annotations

import json

from contend.cli import main


def test_quick_reproduction_shows_the_seeds_shapes(tmp_path, capsys):
    assert main(["reproduce", "nimc", "--quick", "-o", str(tmp_path)]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert all(f["ok"] for f in results["findings"]), [f["title"] for f in results["findings"] if not f["ok"]]
    for name in ("index.html", "stream.png", "at_scale.png"):
        assert (tmp_path / name).stat().st_size > 0

    # STREAM: ours beside Groves 2016's table (offload without headroom loses the writes' bandwidth,
    # with headroom nothing, onload half).
    stream = results["stream"]
    assert abs(stream["westmere-offload"]["with"] - 9.7) < 0.05
    assert abs(stream["sandybridge-offload"]["with"] - stream["sandybridge-offload"]["without"]) < 0.05
    assert abs(stream["sandybridge-onload"]["with"] - 36.1) < 0.1
    # Offload: the loss grows in proportion to the RDMA volume; onload loses more at every rate.
    rates = sorted(results["stream_by_rate"]["westmere-offload"], key=float)
    base = stream["westmere-offload"]["without"]
    for r in rates:
        loss = base - results["stream_by_rate"]["westmere-offload"][r]
        assert abs(loss - float(r) / 1e9) < 0.01
        onload_loss = stream["sandybridge-onload"]["without"] - results["stream_by_rate"]["sandybridge-onload"][r]
        assert onload_loss > 2 * loss

    at_scale = results["at_scale"]
    loaded = [e for e in at_scale.values() if e["writers"] > 0]
    assert loaded and at_scale["64"]["writers"] == 0
    for e in loaded:
        s = e["slowdown"]
        assert s["offload"] < 1.05 < s["onload"]                      # onload larger
        assert s["onload, throttled"] < s["onload"]                   # throttling reduces the slowdown
        assert s["onload, reserved core"] < 1.03                      # reservation removes the impact
    # Core reservation: a roughly constant overhead against the plain node, whatever the scale.
    reserved = [e["total"]["onload, reserved core"] for e in at_scale.values()]
    assert max(reserved) - min(reserved) < 0.08
    # Throttling to 1 GB/s in windows of the same length delivers less data.
    e = loaded[-1]
    assert e["checkpoint_bytes"]["onload, throttled"] * 3 < e["checkpoint_bytes"]["onload"]
