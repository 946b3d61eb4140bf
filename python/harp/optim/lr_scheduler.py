"""harp.optim.lr_scheduler: learning-rate schedules as torch's, set on the
optimizer's groups at every step(). The learning rate is a Python number,
hence an argument of the update kernels: a new rate compiles nothing.

Each scheduler computes torch 1.13's values the way torch does: most from
the groups' current rates (torch's chainable form, so schedulers compose),
and the closed form of the epoch when step(epoch) is given; StepLR and
CosineAnnealingLR use their closed forms. `state_dict()` holds every
attribute but the optimizer, under torch's names, and
`load_state_dict()` restores them. A subclass defines `get_lr()` from
`self.base_lrs` and `self.last_epoch`, as one of torch's _LRScheduler.
"""

import math
import types
import warnings
from bisect import bisect_right
from collections import Counter

__all__ = ["CosineAnnealingLR", "ExponentialLR", "LambdaLR", "LinearLR",
           "MultiStepLR", "MultiplicativeLR", "OneCycleLR", "ReduceLROnPlateau",
           "StepLR"]

_EPOCH_WARNING = ("The epoch parameter in `scheduler.step()` was not necessary and is "
                  "being deprecated where possible. Please use `scheduler.step()` to "
                  "step the scheduler. During the deprecation, if epoch is different "
                  "from None, the closed form is used instead of the new chainable "
                  "form, where available.")


def _check_optimizer(optimizer):
    from . import Optimizer
    if not isinstance(optimizer, Optimizer):
        raise TypeError("%s is not an Optimizer" % type(optimizer).__name__)


def _per_group(name, optimizer, value):
    """`value` (one, or a list or tuple of one per group) per group."""
    if isinstance(value, (list, tuple)):
        if len(value) != len(optimizer.param_groups):
            raise ValueError("expected %d values for %s, got %d"
                             % (len(optimizer.param_groups), name, len(value)))
        return list(value)
    return [value] * len(optimizer.param_groups)


class _LRScheduler:
    """torch.optim.lr_scheduler._LRScheduler: base_lrs are the groups'
    initial learning rates; step() advances last_epoch and sets each
    group's rate to get_lr()'s."""

    def __init__(self, optimizer, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if last_epoch == -1:
            for group in optimizer.param_groups:
                group.setdefault("initial_lr", group["lr"])
        else:
            for i, group in enumerate(optimizer.param_groups):
                if "initial_lr" not in group:
                    raise KeyError("param 'initial_lr' is not specified in "
                                   "param_groups[%d] when resuming an optimizer" % i)
        self.base_lrs = [group["initial_lr"] for group in optimizer.param_groups]
        self.last_epoch = last_epoch
        self.verbose = verbose
        self._get_lr_called_within_step = False
        self._step_count = 0
        self.step()

    def state_dict(self):
        """Every attribute but the optimizer, as torch's."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned."""
        self.__dict__.update(state_dict)

    def get_last_lr(self):
        """The learning rate of each group after the last step()."""
        return list(self._last_lr)

    def get_lr(self):
        """The learning rate of each group at last_epoch."""
        raise NotImplementedError

    def _warn_outside_step(self):
        if not self._get_lr_called_within_step:
            warnings.warn("To get the last learning rate computed by the scheduler, "
                          "please use `get_last_lr()`.", UserWarning)

    def print_lr(self, is_verbose, group, lr, epoch=None):
        """Prints the new rate of a group when `is_verbose`, as torch's."""
        if is_verbose:
            if epoch is None:
                print("Adjusting learning rate of group {} to {:.4e}.".format(group, lr))
            else:
                epoch_str = ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch
                print("Epoch {}: adjusting learning rate of group {} to {:.4e}."
                      .format(epoch_str, group, lr))

    def step(self, epoch=None):
        """Advances one epoch (or to `epoch`, with the closed form where the
        schedule has one) and sets each group's learning rate."""
        self._step_count += 1
        self._get_lr_called_within_step = True
        try:
            if epoch is None:
                self.last_epoch += 1
                values = self.get_lr()
            else:
                warnings.warn(_EPOCH_WARNING, UserWarning)
                self.last_epoch = epoch
                closed_form = getattr(self, "_get_closed_form_lr", None)
                values = closed_form() if closed_form else self.get_lr()
        finally:
            self._get_lr_called_within_step = False
        for i, (group, lr) in enumerate(zip(self.optimizer.param_groups, values)):
            group["lr"] = lr
            self.print_lr(self.verbose, i, lr, epoch)
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]


class _LambdaScheduler(_LRScheduler):
    """One function of the epoch per group; state_dict keeps the state of
    those that are callable objects (not of functions), as torch's."""

    def __init__(self, optimizer, lr_lambda, last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(lr_lambda, (list, tuple)):
            if len(lr_lambda) != len(optimizer.param_groups):
                raise ValueError("%s: expected %d lr_lambdas, but got %d"
                                 % (type(self).__name__, len(optimizer.param_groups),
                                    len(lr_lambda)))
            self.lr_lambdas = list(lr_lambda)
        else:
            self.lr_lambdas = [lr_lambda] * len(optimizer.param_groups)
        super().__init__(optimizer, last_epoch, verbose)

    def state_dict(self):
        """The attributes but the optimizer, and of each lr_lambda the
        attributes of a callable object (None for a function)."""
        state = {key: value for key, value in self.__dict__.items()
                 if key not in ("optimizer", "lr_lambdas")}
        state["lr_lambdas"] = [None if isinstance(fn, types.FunctionType) else fn.__dict__.copy()
                               for fn in self.lr_lambdas]
        return state

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned."""
        state_dict = dict(state_dict)
        lambdas = state_dict.pop("lr_lambdas")
        self.__dict__.update(state_dict)
        for fn, saved in zip(self.lr_lambdas, lambdas):
            if saved is not None:
                fn.__dict__.update(saved)


class LambdaLR(_LambdaScheduler):
    """lr = base_lr * lr_lambda(epoch) (one function, or one per group)."""

    def get_lr(self):
        self._warn_outside_step()
        return [base * fn(self.last_epoch) for fn, base in zip(self.lr_lambdas, self.base_lrs)]


class MultiplicativeLR(_LambdaScheduler):
    """lr *= lr_lambda(epoch) at every step after the first (one function,
    or one per group)."""

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch > 0:
            return [group["lr"] * fn(self.last_epoch) for fn, group in zip(self.lr_lambdas, groups)]
        return [group["lr"] for group in groups]


class StepLR(_LRScheduler):
    """lr = base_lr * gamma ** (epoch // step_size)."""

    def __init__(self, optimizer, step_size, gamma=0.1, last_epoch=-1, verbose=False):
        self.step_size, self.gamma = step_size, gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        return self._get_closed_form_lr()

    def _get_closed_form_lr(self):
        return [base * self.gamma ** (self.last_epoch // self.step_size)
                for base in self.base_lrs]


class MultiStepLR(_LRScheduler):
    """lr *= gamma at each milestone epoch (a milestone listed k times: gamma ** k)."""

    def __init__(self, optimizer, milestones, gamma=0.1, last_epoch=-1, verbose=False):
        self.milestones = Counter(milestones)
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch not in self.milestones:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma ** self.milestones[self.last_epoch] for group in groups]

    def _get_closed_form_lr(self):
        milestones = sorted(self.milestones.elements())
        return [base * self.gamma ** bisect_right(milestones, self.last_epoch)
                for base in self.base_lrs]


class ExponentialLR(_LRScheduler):
    """lr *= gamma at every step after the first."""

    def __init__(self, optimizer, gamma, last_epoch=-1, verbose=False):
        self.gamma = gamma
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] for group in groups]
        return [group["lr"] * self.gamma for group in groups]

    def _get_closed_form_lr(self):
        return [base * self.gamma ** self.last_epoch for base in self.base_lrs]


class LinearLR(_LRScheduler):
    """lr = base_lr times a factor going linearly from start_factor to
    end_factor over total_iters epochs, then staying."""

    def __init__(self, optimizer, start_factor=1.0 / 3, end_factor=1.0, total_iters=5,
                 last_epoch=-1, verbose=False):
        if not 0 <= start_factor <= 1.0:
            raise ValueError("LinearLR: starting multiplicative factor expected to be "
                             "between 0 and 1, got %r" % (start_factor,))
        if not 0 <= end_factor <= 1.0:
            raise ValueError("LinearLR: ending multiplicative factor expected to be "
                             "between 0 and 1, got %r" % (end_factor,))
        self.start_factor = start_factor
        self.end_factor = end_factor
        self.total_iters = total_iters
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        groups = self.optimizer.param_groups
        if self.last_epoch == 0:
            return [group["lr"] * self.start_factor for group in groups]
        if self.last_epoch > self.total_iters:
            return [group["lr"] for group in groups]
        change = self.end_factor - self.start_factor
        factor = 1.0 + change / (self.total_iters * self.start_factor
                                 + (self.last_epoch - 1) * change)
        return [group["lr"] * factor for group in groups]

    def _get_closed_form_lr(self):
        change = self.end_factor - self.start_factor
        return [base * (self.start_factor
                        + change * min(self.total_iters, self.last_epoch) / self.total_iters)
                for base in self.base_lrs]


class CosineAnnealingLR(_LRScheduler):
    """lr = eta_min + (base_lr - eta_min) (1 + cos(pi epoch / T_max)) / 2."""

    def __init__(self, optimizer, T_max, eta_min=0.0, last_epoch=-1, verbose=False):
        self.T_max, self.eta_min = T_max, eta_min
        super().__init__(optimizer, last_epoch, verbose)

    def get_lr(self):
        self._warn_outside_step()
        return self._get_closed_form_lr()

    def _get_closed_form_lr(self):
        return [self.eta_min + (base - self.eta_min)
                * (1 + math.cos(math.pi * self.last_epoch / self.T_max)) / 2
                for base in self.base_lrs]


class OneCycleLR(_LRScheduler):
    """The 1cycle policy (torch.optim.lr_scheduler.OneCycleLR), stepped
    once per batch: the rate rises from max_lr / div_factor to max_lr over
    pct_start of total_steps (or epochs * steps_per_epoch), then anneals
    ("cos" or "linear") to that initial rate / final_div_factor
    (three_phase: back to the initial rate first); with cycle_momentum the
    momentum (or Adam's beta1) moves the other way between
    max_momentum and base_momentum. Stepping past total_steps raises
    ValueError."""

    def __init__(self, optimizer, max_lr, total_steps=None, epochs=None,
                 steps_per_epoch=None, pct_start=0.3, anneal_strategy="cos",
                 cycle_momentum=True, base_momentum=0.85, max_momentum=0.95,
                 div_factor=25.0, final_div_factor=1e4, three_phase=False,
                 last_epoch=-1, verbose=False):
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if total_steps is None and epochs is None and steps_per_epoch is None:
            raise ValueError("OneCycleLR: you must define either total_steps OR "
                             "(epochs AND steps_per_epoch)")
        if total_steps is not None:
            if not isinstance(total_steps, int) or total_steps <= 0:
                raise ValueError("OneCycleLR: expected positive integer total_steps, but "
                                 "got %r" % (total_steps,))
            self.total_steps = total_steps
        else:
            for name, value in (("epochs", epochs), ("steps_per_epoch", steps_per_epoch)):
                if not isinstance(value, int) or value <= 0:
                    raise ValueError("OneCycleLR: expected positive integer %s, but got %r"
                                     % (name, value))
            self.total_steps = epochs * steps_per_epoch
        if three_phase:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1,
                 "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": float(2 * pct_start * self.total_steps) - 2,
                 "start_lr": "max_lr", "end_lr": "initial_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
                {"end_step": self.total_steps - 1,
                 "start_lr": "initial_lr", "end_lr": "min_lr",
                 "start_momentum": "max_momentum", "end_momentum": "max_momentum"},
            ]
        else:
            self._schedule_phases = [
                {"end_step": float(pct_start * self.total_steps) - 1,
                 "start_lr": "initial_lr", "end_lr": "max_lr",
                 "start_momentum": "max_momentum", "end_momentum": "base_momentum"},
                {"end_step": self.total_steps - 1,
                 "start_lr": "max_lr", "end_lr": "min_lr",
                 "start_momentum": "base_momentum", "end_momentum": "max_momentum"},
            ]
        if not isinstance(pct_start, float) or not 0 <= pct_start <= 1:
            raise ValueError("OneCycleLR: expected float between 0 and 1 pct_start, but "
                             "got %r" % (pct_start,))
        if anneal_strategy not in ("cos", "linear"):
            raise ValueError("OneCycleLR: anneal_strategy must be one of 'cos' or "
                             "'linear', instead got %r" % (anneal_strategy,))
        self.anneal_func = self._annealing_cos if anneal_strategy == "cos" \
            else self._annealing_linear
        max_lrs = _per_group("max_lr", optimizer, max_lr)
        if last_epoch == -1:
            for lr, group in zip(max_lrs, optimizer.param_groups):
                group["initial_lr"] = lr / div_factor
                group["max_lr"] = lr
                group["min_lr"] = group["initial_lr"] / final_div_factor
        self.cycle_momentum = cycle_momentum
        if cycle_momentum:
            if "momentum" not in optimizer.defaults and "betas" not in optimizer.defaults:
                raise ValueError("OneCycleLR: optimizer must support momentum with "
                                 "`cycle_momentum` option enabled")
            self.use_beta1 = "betas" in optimizer.defaults
            max_momentums = _per_group("max_momentum", optimizer, max_momentum)
            base_momentums = _per_group("base_momentum", optimizer, base_momentum)
            if last_epoch == -1:
                for high, low, group in zip(max_momentums, base_momentums,
                                            optimizer.param_groups):
                    self._set_momentum(group, high)
                    group["max_momentum"] = high
                    group["base_momentum"] = low
        super().__init__(optimizer, last_epoch, verbose)

    def _set_momentum(self, group, value):
        if self.use_beta1:
            group["betas"] = (value,) + tuple(group["betas"][1:])
        else:
            group["momentum"] = value

    @staticmethod
    def _annealing_cos(start, end, pct):
        """From start to end along half a cosine as pct goes from 0 to 1."""
        return end + (start - end) / 2.0 * (math.cos(math.pi * pct) + 1)

    @staticmethod
    def _annealing_linear(start, end, pct):
        """From start to end linearly as pct goes from 0 to 1."""
        return (end - start) * pct + start

    def get_lr(self):
        self._warn_outside_step()
        step = self.last_epoch
        if step > self.total_steps:
            raise ValueError("OneCycleLR: tried to step %d times; the specified number "
                             "of total steps is %d" % (step + 1, self.total_steps))
        lrs = []
        for group in self.optimizer.param_groups:
            start = 0
            for i, phase in enumerate(self._schedule_phases):
                end = phase["end_step"]
                if step <= end or i == len(self._schedule_phases) - 1:
                    pct = (step - start) / (end - start)
                    lr = self.anneal_func(group[phase["start_lr"]], group[phase["end_lr"]], pct)
                    if self.cycle_momentum:
                        momentum = self.anneal_func(group[phase["start_momentum"]],
                                                    group[phase["end_momentum"]], pct)
                    break
                start = phase["end_step"]
            lrs.append(lr)
            if self.cycle_momentum:
                self._set_momentum(group, momentum)
        return lrs

    def state_dict(self):
        """The attributes but the optimizer (the annealing function by name)."""
        state = super().state_dict()
        state["anneal_func"] = self.anneal_func.__name__
        return state

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned."""
        state_dict = dict(state_dict)
        name = state_dict.pop("anneal_func", None)
        super().load_state_dict(state_dict)
        if isinstance(name, str):
            self.anneal_func = getattr(self, name)


class ReduceLROnPlateau:
    """Multiplies the rates by `factor` when the metric passed to
    step(metric) has not improved (mode "min" or "max", by more than
    `threshold`, relative ("rel") or absolute ("abs")) for more than
    `patience` steps; then waits `cooldown` steps, and never goes below
    `min_lr` (one, or one per group) or changes a rate by eps or less
    (torch.optim.lr_scheduler.ReduceLROnPlateau). get_last_lr() gives the
    rates after the last step."""

    def __init__(self, optimizer, mode="min", factor=0.1, patience=10, threshold=1e-4,
                 threshold_mode="rel", cooldown=0, min_lr=0, eps=1e-8, verbose=False):
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau: factor should be < 1.0, got %r" % (factor,))
        self.factor = factor
        _check_optimizer(optimizer)
        self.optimizer = optimizer
        if isinstance(min_lr, (list, tuple)):
            if len(min_lr) != len(optimizer.param_groups):
                raise ValueError("ReduceLROnPlateau: expected %d min_lrs, got %d"
                                 % (len(optimizer.param_groups), len(min_lr)))
            self.min_lrs = list(min_lr)
        else:
            self.min_lrs = [min_lr] * len(optimizer.param_groups)
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.cooldown_counter = 0
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode
        self.best = None
        self.num_bad_epochs = None
        self.mode_worse = None
        self.eps = eps
        self.last_epoch = 0
        self._last_lr = [group["lr"] for group in optimizer.param_groups]
        self._init_is_better(mode, threshold, threshold_mode)
        self._reset()

    def _reset(self):
        self.best = self.mode_worse
        self.cooldown_counter = 0
        self.num_bad_epochs = 0

    def step(self, metrics, epoch=None):
        """One epoch's metric (a number or a one-element tensor)."""
        from .. import _harp
        if isinstance(metrics, _harp.Tensor):
            metrics = metrics.item()
        current = float(metrics)
        if epoch is None:
            epoch = self.last_epoch + 1
        else:
            warnings.warn(_EPOCH_WARNING, UserWarning)
        self.last_epoch = epoch
        if self.is_better(current, self.best):
            self.best = current
            self.num_bad_epochs = 0
        else:
            self.num_bad_epochs += 1
        if self.in_cooldown:
            self.cooldown_counter -= 1
            self.num_bad_epochs = 0  # bad epochs in the cooldown do not count
        if self.num_bad_epochs > self.patience:
            self._reduce_lr(epoch)
            self.cooldown_counter = self.cooldown
            self.num_bad_epochs = 0
        self._last_lr = [group["lr"] for group in self.optimizer.param_groups]

    def _reduce_lr(self, epoch):
        for i, group in enumerate(self.optimizer.param_groups):
            old = float(group["lr"])
            new = max(old * self.factor, self.min_lrs[i])
            if old - new > self.eps:
                group["lr"] = new
                if self.verbose:
                    epoch_str = ("%.2f" if isinstance(epoch, float) else "%.5d") % epoch
                    print("Epoch {}: reducing learning rate of group {} to {:.4e}."
                          .format(epoch_str, i, new))

    @property
    def in_cooldown(self):
        """Whether the scheduler is waiting after a reduction."""
        return self.cooldown_counter > 0

    def is_better(self, a, best):
        """Whether the metric `a` improves on `best` by more than the threshold."""
        if self.mode == "min" and self.threshold_mode == "rel":
            return a < best * (1.0 - self.threshold)
        if self.mode == "min":
            return a < best - self.threshold
        if self.threshold_mode == "rel":
            return a > best * (self.threshold + 1.0)
        return a > best + self.threshold

    def _init_is_better(self, mode, threshold, threshold_mode):
        if mode not in ("min", "max"):
            raise ValueError("ReduceLROnPlateau: mode %r is unknown (min or max)" % (mode,))
        if threshold_mode not in ("rel", "abs"):
            raise ValueError("ReduceLROnPlateau: threshold mode %r is unknown (rel or abs)"
                             % (threshold_mode,))
        self.mode_worse = math.inf if mode == "min" else -math.inf
        self.mode = mode
        self.threshold = threshold
        self.threshold_mode = threshold_mode

    def get_last_lr(self):
        """The learning rate of each group after the last step()."""
        return list(self._last_lr)

    def state_dict(self):
        """Every attribute but the optimizer, as torch's."""
        return {key: value for key, value in self.__dict__.items() if key != "optimizer"}

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned."""
        self.__dict__.update(state_dict)
        self._init_is_better(self.mode, self.threshold, self.threshold_mode)
