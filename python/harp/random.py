"""harp's random streams (torch.random's names).

Every random op of harp (rand, randn, randint, normal, bernoulli, dropout)
draws from a counter-based generator: element i of a draw depends only on
the draw's seed and i. A `Generator` hands out one fresh seed per draw, and
the seed is a run-time argument of the compiled code, so each call gives new
numbers and compiles nothing. `manual_seed` restarts every stream (the
default generator, dropout, and the initialisers of harp.nn.init); the same
seed gives the same sequence of numbers on every machine. A generator's
state is the pair (initial seed, number of draws so far).
"""

from . import _harp

__all__ = ["Generator", "default_generator", "get_rng_state", "initial_seed",
           "manual_seed", "next_seed", "seed", "set_rng_state"]

Generator = _harp.Generator
Generator.__doc__ = (
    "A stream of seeds, one per random draw (torch.Generator): "
    "Generator(seed) or Generator(); manual_seed(s) restarts it, seed() "
    "restarts it from a nondeterministic seed, get_state() / set_state() "
    "save and resume it as the pair (initial seed, draws so far).")

default_generator = _harp.default_generator()


def manual_seed(seed):
    """Seeds every random stream of harp: the default generator (rand, randn,
    randint, normal, bernoulli, dropout) and harp.nn.init's generator (so the
    modules' default initialisation). Returns the default generator."""
    from .nn import init
    seed = int(seed)
    if seed < 0:
        seed += 1 << 64  # torch accepts negative seeds as their two's complement
    if not 0 <= seed < 1 << 64:
        raise ValueError("manual_seed: the seed must fit in 64 bits, got %d" % seed)
    init.manual_seed(seed)
    return default_generator.manual_seed(seed)


def seed():
    """Seeds the default generator nondeterministically; returns that seed."""
    return default_generator.seed()


def initial_seed():
    """The seed the default generator started from."""
    return default_generator.initial_seed()


def get_rng_state():
    """The default generator's state (initial seed, draws so far)."""
    return default_generator.get_state()


def set_rng_state(new_state):
    """Resumes the default generator at a state get_rng_state() returned."""
    default_generator.set_state(tuple(new_state))


def next_seed(generator=None, seed=None):
    """The seed of one draw: `seed` when given (the same numbers on every
    call), else the next of `generator`'s stream (the default one unless
    given)."""
    if seed is not None:
        if generator is not None:
            raise ValueError("give either seed= or generator=, not both")
        return int(seed) & 0x7FFFFFFFFFFFFFFF
    if generator is None:
        return default_generator.next_seed()
    if not isinstance(generator, Generator):
        raise TypeError("generator must be a harp.Generator, got %s"
                        % type(generator).__name__)
    return generator.next_seed()
