"""L-BFGS (torch.optim.LBFGS): a quasi-Newton method over all parameters
flattened into one vector, stepping with a closure that recomputes the loss
and its gradient, as torch's.

The direction is the two-loop recursion over the last `history_size`
curvature pairs (s, y) (pairs with y.s <= 1e-10 skipped), scaled by
H = y.s / y.y; the first step is min(1, 1 / |g|_1) x lr, later ones lr (or
the strong-Wolfe line search's). The vector work (dot products over the
flat gradient and history) runs in NumPy in the parameters' dtype: it is a
few passes over one vector per iteration, while each closure call runs the
model as compiled harp code.
"""

import numpy as np

from .. import _harp

__all__ = ["LBFGS"]


def _cubic_minimum(x1, f1, g1, x2, f2, g2, bounds=None):
    """The minimum of the cubic through (x1, f1, g1) and (x2, f2, g2), kept
    inside `bounds` (default: the two points); the bounds' middle where the
    cubic has none."""
    lo, hi = bounds if bounds is not None else ((x1, x2) if x1 <= x2 else (x2, x1))
    d1 = g1 + g2 - 3 * (f1 - f2) / (x1 - x2)
    d2_square = d1 * d1 - g1 * g2
    if d2_square >= 0:
        d2 = np.sqrt(d2_square)
        if x1 <= x2:
            x = x2 - (x2 - x1) * ((g2 + d2 - d1) / (g2 - g1 + 2 * d2))
        else:
            x = x1 - (x1 - x2) * ((g1 + d2 - d1) / (g1 - g2 + 2 * d2))
        return min(max(x, lo), hi)
    return (lo + hi) / 2.0


def _strong_wolfe(evaluate, t, d, f, g, gtd, c1=1e-4, c2=0.9, tolerance_change=1e-9,
                  max_ls=25):
    """A step t along d satisfying the strong Wolfe conditions (sufficient
    decrease c1, curvature c2): bracketing, then zooming by cubic
    interpolation. `evaluate(t, d)` -> (loss, flat gradient) at the start
    point + t d.
    Returns (loss, gradient, t, evaluations)."""
    d_norm = np.abs(d).max()
    g = g.copy()
    f_new, g_new = evaluate(t, d)
    evals = 1
    gtd_new = float(g_new.dot(d))
    t_prev, f_prev, g_prev, gtd_prev = 0.0, f, g, gtd
    done = False
    iterations = 0
    while iterations < max_ls:
        if f_new > f + c1 * t * gtd or (iterations > 1 and f_new >= f_prev):
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        if abs(gtd_new) <= -c2 * gtd:
            bracket, bracket_f, bracket_g = [t], [f_new], [g_new]
            done = True
            break
        if gtd_new >= 0:
            bracket = [t_prev, t]
            bracket_f = [f_prev, f_new]
            bracket_g = [g_prev, g_new.copy()]
            bracket_gtd = [gtd_prev, gtd_new]
            break
        min_step = t + 0.01 * (t - t_prev)
        max_step = t * 10
        tmp = t
        t = _cubic_minimum(t_prev, f_prev, gtd_prev, t, f_new, gtd_new,
                           bounds=(min_step, max_step))
        t_prev, f_prev, g_prev, gtd_prev = tmp, f_new, g_new.copy(), gtd_new
        f_new, g_new = evaluate(t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        iterations += 1
    if iterations == max_ls:
        bracket, bracket_f, bracket_g = [0.0, t], [f, f_new], [g, g_new]
    insufficient = False
    low, high = (0, 1) if bracket_f[0] <= bracket_f[-1] else (1, 0)
    while not done and iterations < max_ls:
        if abs(bracket[1] - bracket[0]) * d_norm < tolerance_change:
            break
        t = _cubic_minimum(bracket[0], bracket_f[0], bracket_gtd[0],
                           bracket[1], bracket_f[1], bracket_gtd[1])
        eps = 0.1 * (max(bracket) - min(bracket))
        if min(max(bracket) - t, t - min(bracket)) < eps:
            if insufficient or t >= max(bracket) or t <= min(bracket):
                t = max(bracket) - eps if abs(t - max(bracket)) < abs(t - min(bracket)) \
                    else min(bracket) + eps
                insufficient = False
            else:
                insufficient = True
        else:
            insufficient = False
        f_new, g_new = evaluate(t, d)
        evals += 1
        gtd_new = float(g_new.dot(d))
        iterations += 1
        if f_new > f + c1 * t * gtd or f_new >= bracket_f[low]:
            bracket[high], bracket_f[high] = t, f_new
            bracket_g[high], bracket_gtd[high] = g_new.copy(), gtd_new
            low, high = (0, 1) if bracket_f[0] <= bracket_f[1] else (1, 0)
        else:
            if abs(gtd_new) <= -c2 * gtd:
                done = True
            elif gtd_new * (bracket[high] - bracket[low]) >= 0:
                bracket[high], bracket_f[high] = bracket[low], bracket_f[low]
                bracket_g[high], bracket_gtd[high] = bracket_g[low], bracket_gtd[low]
            bracket[low], bracket_f[low] = t, f_new
            bracket_g[low], bracket_gtd[low] = g_new.copy(), gtd_new
    t = bracket[low]
    return bracket_f[low], bracket_g[low], t, evals


class LBFGS:
    """L-BFGS with torch.optim.LBFGS's arguments and state: step(closure)
    calls `closure` (which zeroes the gradients, computes the loss, calls
    backward() and returns the loss) up to max_eval times, taking up to
    max_iter steps, and returns the first loss. One parameter group.
    line_search_fn: None (fixed steps) or "strong_wolfe"."""

    def __init__(self, params, lr=1, max_iter=20, max_eval=None, tolerance_grad=1e-7,
                 tolerance_change=1e-9, history_size=100, line_search_fn=None):
        params = list(params)
        if not params:
            raise ValueError("LBFGS: got an empty parameter list")
        if isinstance(params[0], dict):
            if len(params) != 1:
                raise ValueError("LBFGS doesn't support per-parameter options "
                                 "(parameter groups)")
            group = dict(params[0])
            params = list(group.pop("params"))
        else:
            group = {}
        for p in params:
            if not isinstance(p, _harp.Tensor):
                raise TypeError("LBFGS: parameters must be harp tensors, got %s"
                                % type(p).__name__)
            if not p.requires_grad:
                raise ValueError("LBFGS: a parameter of shape %s does not require a gradient"
                                 % list(p.shape))
        if line_search_fn not in (None, "strong_wolfe"):
            raise ValueError("LBFGS: line_search_fn must be None or 'strong_wolfe', got %r"
                             % (line_search_fn,))
        if not lr > 0:
            raise ValueError("LBFGS: lr must be positive, got %r" % (lr,))
        if max_eval is None:
            max_eval = max_iter * 5 // 4
        self.defaults = dict(lr=lr, max_iter=max_iter, max_eval=max_eval,
                             tolerance_grad=tolerance_grad, tolerance_change=tolerance_change,
                             history_size=history_size, line_search_fn=line_search_fn)
        group = {**self.defaults, **group, "params": params}
        self.param_groups = [group]
        self.state = {}
        self._params = params

    def zero_grad(self, set_to_none=True):
        """Forgets every parameter's accumulated gradient."""
        for p in self._params:
            p.zero_grad()

    def _flat_grad(self):
        parts = []
        for p in self._params:
            g = p.grad
            parts.append(np.zeros(int(np.prod(p.shape)), p.numpy().dtype) if g is None
                         else np.asarray(g.numpy()).ravel())
        return np.concatenate(parts) if parts else np.zeros(0)

    def _values(self):
        return [np.array(p.numpy()) for p in self._params]

    def _set(self, values):
        from .. import no_grad
        with no_grad():
            for p, v in zip(self._params, values):
                p.copy_(np.require(v, p.numpy().dtype, "C"))

    def _add(self, t, d):
        """Every parameter += t x its piece of d."""
        offset = 0
        from .. import no_grad
        with no_grad():
            for p in self._params:
                n = int(np.prod(p.shape))
                values = np.array(p.numpy())
                values = values + (t * d[offset:offset + n]).reshape(values.shape).astype(
                    values.dtype)
                p.copy_(np.require(values, None, "C"))
                offset += n

    @staticmethod
    def _loss(closure):
        from .. import enable_grad
        with enable_grad():
            loss = closure()
        return loss, float(loss.item() if isinstance(loss, _harp.Tensor) else loss)

    def step(self, closure):
        """Up to max_iter L-BFGS steps, each evaluating `closure`; returns
        the loss of the first evaluation."""
        if closure is None:
            raise ValueError("LBFGS: step needs a closure that returns the loss")
        group = self.param_groups[0]
        lr, max_iter, max_eval = group["lr"], group["max_iter"], group["max_eval"]
        tolerance_grad, tolerance_change = group["tolerance_grad"], group["tolerance_change"]
        history_size, line_search_fn = group["history_size"], group["line_search_fn"]
        state = self.state.setdefault("global", {})
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss, loss = self._loss(closure)
        current_evals = 1
        state["func_evals"] += 1
        flat_grad = self._flat_grad()
        if flat_grad.size == 0 or np.abs(flat_grad).max() <= tolerance_grad:
            return orig_loss

        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag = state.get("H_diag")
        prev_flat_grad, prev_loss = state.get("prev_flat_grad"), state.get("prev_loss")

        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = -flat_grad
                old_dirs, old_stps, ro = [], [], []
                H_diag = 1.0
            else:
                y = flat_grad - prev_flat_grad
                s = d * t
                ys = float(y.dot(s))
                if ys > 1e-10:
                    if len(old_dirs) == history_size:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / float(y.dot(y))
                alphas = [0.0] * len(old_dirs)
                q = -flat_grad
                for i in range(len(old_dirs) - 1, -1, -1):
                    alphas[i] = float(old_stps[i].dot(q)) * ro[i]
                    q = q - alphas[i] * old_dirs[i]
                r = q * H_diag
                for i in range(len(old_dirs)):
                    beta = float(old_dirs[i].dot(r)) * ro[i]
                    r = r + old_stps[i] * (alphas[i] - beta)
                d = r.astype(flat_grad.dtype)
            prev_flat_grad = flat_grad.copy()
            prev_loss = loss
            if state["n_iter"] == 1:
                t = min(1.0, 1.0 / float(np.abs(flat_grad).sum())) * lr
            else:
                t = lr
            gtd = float(flat_grad.dot(d))
            if gtd > -tolerance_change:
                break

            evals = 0
            if line_search_fn == "strong_wolfe":
                start = self._values()

                def evaluate(step, direction):
                    self._set(start)
                    self._add(step, direction)
                    return self._loss(closure)[1], self._flat_grad()

                loss, flat_grad, t, evals = _strong_wolfe(evaluate, t, d, loss, flat_grad, gtd)
                self._set(start)
                self._add(t, d)
                opt_cond = np.abs(flat_grad).max() <= tolerance_grad
            else:
                self._add(t, d)
                opt_cond = False
                if n_iter != max_iter:
                    _, loss = self._loss(closure)
                    flat_grad = self._flat_grad()
                    opt_cond = np.abs(flat_grad).max() <= tolerance_grad
                    evals = 1
            current_evals += evals
            state["func_evals"] += evals

            if n_iter == max_iter or current_evals >= max_eval or opt_cond:
                break
            if np.abs(d * t).max() <= tolerance_change:
                break
            if abs(loss - prev_loss) < tolerance_change:
                break

        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss

    def state_dict(self):
        """The options and the state (history vectors as NumPy arrays)."""
        group = {k: v for k, v in self.param_groups[0].items() if k != "params"}
        group["params"] = list(range(len(self._params)))
        return {"state": dict(self.state.get("global", {})), "param_groups": [group]}

    def load_state_dict(self, state_dict):
        """Restores what state_dict() returned."""
        self.param_groups[0].update({k: v for k, v in state_dict["param_groups"][0].items()
                                     if k != "params"})
        self.state = {"global": dict(state_dict["state"])}
