"""A pytest helper: a multi-rank test body, simulated at several world sizes.

    from ranks.testing import simulated

    @simulated(2, 3, 8, backend="gloo")
    def test_sum():
        t = torch.ones(1)
        dist.all_reduce(t)
        assert t.item() == dist.get_world_size()

Each world size is its own run; the first whose outcome is not ok fails the test with the human
report (which rank, which op, where).
"""

import functools

import ranks.sim


def simulated(*world_sizes, **options):
    """Decorates a body (no arguments) into a test that runs it at each world size (default 1, 2,
    3, 4); options as ranks.sim.run's."""
    sizes = world_sizes or (1, 2, 3, 4)

    def decorate(body):
        @functools.wraps(body)
        def test():
            for size in sizes:
                ranks.sim.check(body, world_size=size, **options)

        return test

    return decorate
