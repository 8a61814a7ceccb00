"""Machine files with a [topology] table: the network reaches the engine, bad tables stop with exit 2."""

import subprocess
import sys

import pytest

import contend
from contend.errors import UserError
from contend.machine.file import load_machine

BASE = """[machine]
name = "net"
[loggops]
L = "123us"
o = "1us"
g = "500ns"
G = "77ns"
O = "0"
S = 1000000000
"""


def write(tmp_path, topology: str):
    path = tmp_path / "net.toml"
    path.write_text(BASE + "[topology]\n" + topology)
    return path


def test_a_crossbar_incast_shares_the_root_link(tmp_path):
    path = write(tmp_path, 'kind = "crossbar"\nnodes = 5\nlink_bandwidth = "1GB/s"\npacket = 1\n')
    n, size = 4, 1_000_000
    result = contend.simulate(collective="gather", ranks=n + 1, bytes=size, machine=path)
    # o, then n flows share the root's ejection link (n*size bytes at 1 byte/ns), then 1 ns per link for
    # the first byte over 2 links, then the root pays o per message. L and G do not apply between nodes.
    o = 1000
    assert abs(result.makespan - (o + n * size + 2 + n * o)) <= 0.01


def test_packet_sharing_gives_the_incast_within_a_packet_per_message(tmp_path):
    # As above with 1000-byte packets (1 us each): the root's ejection link serves the 4 senders in
    # turn, so the last byte lands one packet time before the fluid answer; the others within a round.
    path = write(tmp_path, 'kind = "crossbar"\nnodes = 5\nlink_bandwidth = "1GB/s"\npacket = 1000\n'
                           'sharing = "packet"\n')
    n, size, o, packet_ns = 4, 1_000_000, 1000, 1000
    result = contend.simulate(collective="gather", ranks=n + 1, bytes=size, machine=path, records=True)
    fluid_last = o + n * size + 2 * packet_ns
    arrived = result.records["arrived"]
    assert arrived.max() == fluid_last - packet_ns
    assert (arrived > fluid_last - (n + 1) * packet_ns).all()
    flow = contend.simulate(collective="gather", ranks=n + 1, bytes=size, machine=path, sharing="flow")
    assert abs(flow.makespan - result.makespan) <= n * packet_ns


BUCKETS = 'kind = "crossbar"\nnodes = 3\nlink_bandwidth = "1GB/s"\npacket = 1\nburst = 100000\n'


def test_token_bucket_links_burst_at_their_peak_then_share_their_sustained_rate(tmp_path):
    # Two senders of 1 MB into the root: 1 GB/s each at its ejection link's 2 GB/s peak until that
    # bucket (100 KB, draining at 1 GB/s) runs out after 100 us, then 0.5 GB/s each for the other
    # 900 KB (1800 us); the first byte crosses 2 links at the peak (0.5 ns each); the root pays o twice.
    path = write(tmp_path, BUCKETS + 'peak_bandwidth = "2GB/s"\n')
    o = 1000
    result = contend.simulate(collective="gather", ranks=3, bytes=1_000_000, machine=path)
    assert result.makespan == o + 1_900_000 + 1 + 2 * o
    # The same links without buckets: 2 MB through 1 GB/s.
    plain = write(tmp_path, BUCKETS.replace("burst = 100000\n", ""))
    assert contend.simulate(collective="gather", ranks=3, bytes=1_000_000, machine=plain).makespan == o + 2_000_000 + 2 + 2 * o


@pytest.mark.parametrize(
    "extra, options, message",
    [
        ("", {}, "burst: needs peak_bandwidth too"),
        ('peak_bandwidth = "2GB/s"\nburst = 0\n', {}, "at least 1 byte"),
        ('peak_bandwidth = "0.5GB/s"\n', {}, r"peak_bandwidth: must be at least the fastest link's bandwidth \(1000 MB/s\)"),
        ('peak_bandwidth = "2GB/s"\n', {"sharing": "packet"}, 'burst: token-bucket links need sharing = "flow"'),
    ],
)
def test_bad_token_buckets_name_the_file_and_key(tmp_path, extra, options, message):
    text = BUCKETS.replace("burst = 100000\n", "") + extra if "burst" in extra else BUCKETS + extra
    path = write(tmp_path, text)
    with pytest.raises(UserError, match=message) as err:
        contend.simulate(collective="gather", ranks=3, bytes=8, machine=path, **options)
    assert str(path) in str(err.value)


def test_sharing_needs_a_network_and_a_known_model(tmp_path):
    plain = tmp_path / "plain.toml"
    plain.write_text(BASE)
    with pytest.raises(UserError, match="no network"):
        contend.simulate(collective="pingpong", ranks=2, bytes=1, machine=plain, sharing="packet")
    path = write(tmp_path, 'kind = "crossbar"\nnodes = 2\nlink_bandwidth = "1GB/s"\n')
    with pytest.raises(UserError, match="unknown link sharing model 'cells'"):
        contend.simulate(collective="pingpong", ranks=2, bytes=1, machine=path, sharing="cells")


def test_the_same_machine_without_topology_is_loggops(tmp_path):
    path = tmp_path / "plain.toml"
    path.write_text(BASE)
    result = contend.simulate(collective="pingpong", ranks=2, bytes=1, machine=path)
    assert result.makespan == 2 * (2 * 1000 + 123_000)


@pytest.mark.parametrize(
    "topology, message",
    [
        ('kind = "hypercube"\nlink_bandwidth = "1GB/s"\n', "unknown topology 'hypercube'"),
        ('kind = "torus"\nlink_bandwidth = "1GB/s"\n', "needs dims"),
        ('kind = "torus"\ndims = [4, 0]\nlink_bandwidth = "1GB/s"\n', "positive sizes"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "0GB/s"\n', "must be positive"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "fast"\n', "expected a bandwidth"),
        ('kind = "torus"\ndims = [4]\n', "link_bandwidth is required"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "1GB/s"\nradix = 3\n', "radix: unknown key; known"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "1GB/s"\nplacement = "random"\n', "block, cyclic"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "1GB/s"\nhop_latency = "soon"\n', "hop_latency"),
        ('kind = "torus"\ndims = [4]\nlink_bandwidth = "1GB/s"\nsharing = "fluid"\n', "unknown link sharing model"),
    ],
)
def test_bad_topology_tables_name_the_file_and_key(tmp_path, topology, message):
    path = write(tmp_path, topology)
    with pytest.raises(UserError, match=message) as err:
        load_machine(path)
    assert str(path) in str(err.value)


def test_ranks_that_do_not_fit_the_topology_exit_2(tmp_path):
    path = write(tmp_path, 'kind = "torus"\ndims = [2, 2]\nlink_bandwidth = "1GB/s"\n')
    done = subprocess.run(
        [sys.executable, "-m", "contend.cli", "sim", "--collective", "dissemination", "--ranks", "5", "--bytes", "8",
         "--machine", str(path)],
        capture_output=True, text=True,
    )
    assert done.returncode == 2
    assert "do not fit on 4 nodes" in done.stderr and "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
