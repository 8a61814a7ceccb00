"""Progress reporting and interruption of long simulations."""

import contend


def test_progress_reaches_the_total_monotonically():
    calls = []
    result = contend.simulate(collective="dissemination", ranks=2**18, bytes=1, progress=lambda done, total: calls.append((done, total)))
    assert len(calls) >= 2  # about 14 M events: several calls before the final one
    totals = {t for _, t in calls}
    assert totals == {result.ops}
    done = [d for d, _ in calls]
    assert done == sorted(done) and done[-1] == result.ops


def test_an_exception_in_the_callback_stops_the_run():
    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop()

    try:
        contend.simulate(collective="dissemination", ranks=2**18, bytes=1, progress=stop)
    except Stop:
        pass
    else:
        raise AssertionError("the callback's exception must propagate")
