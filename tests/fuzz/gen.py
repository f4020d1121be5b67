"""Random op programs over small tensors, deterministic from a seed (tests/fuzz/README.md).

A program is a list of Python source lines run in a namespace holding `torch`, `dev` (the device
the program runs on: cpu or neuron) and `T(values, dtype)` (a tensor on `dev`). The first lines
create a few named tensors (t0, t1, ...) from a seeded CPU generator and move them to `dev`; each
later line is one step (a view, an in-place op, an elementwise/matmul/reduction/indexing op, ...).
The runner reads every live tensor at the end. An invalid program has one step that PyTorch CPU
rejects (shape mismatch, out-of-range index, dtype error); the steps after it do not read what it
writes.

The generator executes each candidate step on CPU as it goes (to know shapes and dtypes, and to
drop candidates that fail by accident), so the program it returns is valid on CPU up to its one
intentionally invalid step.
"""
import random

import torch

FLOAT_DTYPES = (torch.float32, torch.float64)


def _shape(rng, max_dims=3):
    return tuple(rng.randint(1, 4) for _ in range(rng.randint(1, max_dims)))


def _fmt(shape):
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


class Generator:
    def __init__(self, seed, n_steps=None, invalid=None):
        self.seed = seed
        self.rng = random.Random(seed)
        self.lines = []
        self.ns = {"torch": torch, "dev": torch.device("cpu"), "T": _make_T(torch.device("cpu"))}
        self.count = 0
        self.n_steps = n_steps if n_steps is not None else self.rng.randint(3, 12)
        self.invalid = invalid if invalid is not None else (self.rng.random() < 0.2)
        self.invalid_done = False

    # -- state -----------------------------------------------------------------------------
    def tensors(self, pred=lambda t: True):
        return [k for k, v in self.ns.items() if torch.is_tensor(v) and pred(v)]

    def fresh(self):
        name = f"t{self.count}"
        self.count += 1
        return name

    def run(self, line):
        exec(line, self.ns)

    def try_line(self, line):
        """Runs `line` on the CPU namespace; keeps it when it succeeds."""
        snapshot = dict(self.ns)  # the bindings (views keep aliasing their bases)
        try:
            with _quiet():
                self.run(line)
        except Exception:
            self.ns.clear()
            self.ns.update(snapshot)
            return False
        # keep programs small: drop candidates that make huge or non-finite-heavy tensors
        for v in self.ns.values():
            if torch.is_tensor(v) and not 0 < v.numel() <= 512:
                self.ns.clear()
                self.ns.update(snapshot)
                return False
        self.lines.append(line)
        return True

    # -- program ---------------------------------------------------------------------------
    def build(self):
        rng = self.rng
        self.lines.append(f"g = torch.Generator().manual_seed({self.seed})")
        self.run(self.lines[-1])
        for _ in range(rng.randint(2, 4)):
            self.try_line(self.make_input())
        invalid_at = rng.randint(0, self.n_steps - 1) if self.invalid else -1
        step = 0
        attempts = 0
        while step < self.n_steps and attempts < 200:
            attempts += 1
            if step == invalid_at:
                try:
                    line = self.make_invalid()
                except (ValueError, IndexError):
                    line = None
                if line is None:
                    continue
                try:
                    with _quiet():
                        exec(line, dict(self.ns))  # on a copy of the bindings: must raise
                except Exception:
                    self.lines.append(line)
                    self.invalid_done = True
                    step += 1
                continue
            line = self.make_step()
            if line is not None and self.try_line(line):
                step += 1
        return self.lines

    def make_input(self):
        rng = self.rng
        name = self.fresh()
        shape = _fmt(_shape(rng))
        kind = rng.choice(["f32", "f32", "f32", "f64", "i64", "bool"])
        if kind == "f32":
            src = f"torch.randn({shape}, generator=g)"
        elif kind == "f64":
            src = f"torch.randn({shape}, generator=g, dtype=torch.float64)"
        elif kind == "i64":
            src = f"torch.randint(-4, 5, {shape}, generator=g)"
        else:
            src = f"torch.randint(0, 2, {shape}, generator=g).bool()"
        return f"{name} = {src}.to(dev)"

    def pick(self, pred=lambda t: True):
        names = self.tensors(pred)
        return self.rng.choice(names) if names else None

    def make_step(self):
        rng = self.rng
        kind = rng.choice(["view"] * 5 + ["inplace"] * 4 + ["binary"] * 4 + ["unary"] * 2 +
                          ["matmul"] * 2 + ["reduce"] * 3 + ["index"] * 3 + ["cat"] +
                          ["softmax"] + ["where"] + ["input"] + ["read"])
        if kind == "input":
            return self.make_input()
        try:
            return getattr(self, "op_" + kind)()
        except (ValueError, IndexError):  # no candidate fits these shapes (e.g. a 0-d tensor)
            return None

    # -- valid steps ---------------------------------------------------------------------------
    def op_read(self):
        """A read in the middle (a sync on the device) whose value feeds a new tensor."""
        a = self.pick()
        if a is None:
            return None
        out = self.fresh()
        return self.rng.choice([f"{out} = T({a}.float().sum().item(), torch.float32)",
                                f"{out} = T({a}.tolist(), {a}.dtype)"])

    def op_view(self):
        rng = self.rng
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        d = t.dim()
        out = self.fresh()
        choices = []
        if d >= 1:
            dim = rng.randrange(d)
            n = t.shape[dim]
            choices += [
                f"{out} = {a}.view(-1)" if t.is_contiguous() else f"{out} = {a}.reshape(-1)",
                f"{out} = {a}.reshape({_fmt(_factor(rng, t.numel()))})",
                f"{out} = {a}[{':, ' * dim}{rng.randrange(n)}:{rng.randint(rng.randrange(n) + 1, n)}]"
                if n > 1 else f"{out} = {a}.narrow({dim}, 0, 1)",
                f"{out} = {a}.select({dim}, {rng.randrange(-n, n)})",
                f"{out} = {a}.unsqueeze({rng.randint(-d - 1, d)})",
                f"{out} = {a}.squeeze()" if 1 in t.shape else f"{out} = {a}.unsqueeze(0).squeeze(0)",
                f"{out} = {a}.narrow({dim}, {rng.randrange(n)}, 1)",
                f"{out} = {a}[{':, ' * dim}::2]",
            ]
        if d >= 2:
            i, j = rng.sample(range(d), 2)
            perm = list(range(d))
            rng.shuffle(perm)
            choices += [f"{out} = {a}.transpose({i}, {j})", f"{out} = {a}.permute{_fmt(perm)}",
                        f"{out} = {a}.t()" if d == 2 else f"{out} = {a}.transpose(0, -1)"]
        if d >= 1 and 1 in t.shape:
            new = tuple(rng.randint(2, 3) if s == 1 else s for s in t.shape)
            choices.append(f"{out} = {a}.expand{_fmt(new)}")
        choices.append(f"{out} = {a}.expand{_fmt((2,) + tuple(t.shape))}")
        return rng.choice(choices)

    def op_inplace(self):
        rng = self.rng
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        # never an argument that partly aliases what the op writes: PyTorch leaves the result
        # undefined (it depends on the order the kernel visits elements)
        b = self.pick(lambda u: _broadcastable_to(u.shape, t.shape) and _can_cast(u.dtype, t.dtype)
                      and not _partial_alias(u, t))
        is_float = t.dtype.is_floating_point
        c = [f"{a}.fill_({rng.choice([0, 1, -2, 3]) if not is_float else rng.choice([0.5, -1.25, 2.0])})",
             f"{a}.zero_()"]
        if b is not None:
            c += [f"{a}.copy_({b})"]
            if t.dtype != torch.bool:
                c += [f"{a}.add_({b})", f"{a}.mul_({b})", f"{a}.sub_({b})"]
                if is_float:
                    c += [f"{a}.add_({b}, alpha=0.5)", f"{a}.addcmul_({b}, {b}, value=0.25)"]
        if t.dtype != torch.bool:
            c += [f"{a}.clamp_({rng.choice([-1, 0])}, {rng.choice([1, 2])})",
                  f"{a}.add_({rng.choice([1, 2, -3])})", f"{a}.mul_({rng.choice([2, -1])})"]
        if is_float:
            c += [f"{a}.relu_()", f"{a}.neg_()", f"{a}.abs_()"]
        if t.dim() >= 1:
            n = t.shape[0]
            idx = sorted(set(rng.randrange(n) for _ in range(rng.randint(1, n))))
            val = "True" if t.dtype == torch.bool else ("1.5" if is_float else "7")
            c += [f"{a}[T({idx})] = {val}",
                  f"{a}.index_put_((T({idx}),), torch.tensor({val}, dtype={a}.dtype, device=dev))",
                  f"{a}[{rng.randrange(n)}] = {val}"]
            # through a view: the base must see the write
            if t.dim() >= 2:
                c += [f"{a}.transpose(0, 1)[{rng.randrange(t.shape[1])}].fill_({val})",
                      f"{a}[:, 0].add_({'1' if t.dtype != torch.bool else 'True'})"
                      if t.dtype != torch.bool else f"{a}[:, 0].fill_(False)"]
            mask = self.pick(lambda u: u.dtype == torch.bool and _broadcastable_to(u.shape, t.shape)
                             and not _partial_alias(u, t))
            if mask is not None:
                c.append(f"{a}.masked_fill_({mask}, {val})")
        return rng.choice(c)

    def op_binary(self):
        rng = self.rng
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        b = self.pick(lambda u: _broadcastable(u.shape, t.shape))
        if b is None:
            return None
        out = self.fresh()
        ops = ["+", "*", "-"]
        if t.dtype == torch.bool and self.ns[b].dtype == torch.bool:
            ops = ["&", "|", "^", "=="]
        op = rng.choice(ops + ["==", "<", ">="])
        form = rng.choice([f"{a} {op} {b}", f"{a} {op} {rng.choice(['2', '0.5', '-1'])}"])
        if op in ("&", "|", "^") and "0.5" in form:
            form = f"{a} {op} {b}"
        extra = [f"torch.maximum({a}, {b})", f"torch.minimum({a}, {b})",
                 f"torch.div({a}, {b}.abs().double() + 1)"]
        if t.dtype != torch.bool and self.ns[b].dtype != torch.bool:
            extra += [f"torch.floor_divide({a}, {b}.abs() + 1)", f"torch.remainder({a}, {b}.abs() + 1)",
                      f"{a} ** 2", f"torch.cumsum({a}, {rng.randrange(t.dim()) if t.dim() else 0})"]
        return f"{out} = " + rng.choice([form, form, form] + extra)

    def op_unary(self):
        rng = self.rng
        a = self.pick(lambda u: u.dtype != torch.bool)
        if a is None:
            return None
        out = self.fresh()
        f = rng.choice(["{a}.abs()", "{a}.neg()", "torch.exp({a}.float().clamp(-5, 5))", "torch.tanh({a})",
                        "torch.sigmoid({a})", "{a}.float().sqrt()", "{a}.relu()", "{a}.sign()",
                        "{a}.to(torch.float64)", "{a}.to(torch.int64)", "{a}.bool()", "{a}.float() * 0.5"])
        return f"{out} = " + f.format(a=a)

    def op_matmul(self):
        rng = self.rng
        fl = lambda u: u.dtype == torch.float32
        a = self.pick(lambda u: fl(u) and u.dim() in (1, 2, 3))
        if a is None:
            return None
        t = self.ns[a]
        k = t.shape[-1]
        out = self.fresh()
        if t.dim() == 2:
            b = self.pick(lambda u: fl(u) and u.dim() == 2 and u.shape[0] == k)
            if b is None:
                b = f"torch.randn(({k}, {rng.randint(1, 3)}), generator=g).to(dev)"
            n = self.ns[b].shape[1] if b in self.ns else None
            c = [f"{out} = {a} @ {b}", f"{out} = torch.mm({a}, {b})", f"{out} = torch.matmul({a}, {b})"]
            if n is not None:
                c.append(f"{out} = torch.addmm(torch.ones({n}).to(dev), {a}, {b}, beta=0.5, alpha=2.0)")
            return rng.choice(c)
        if t.dim() == 3:
            b = f"torch.randn(({t.shape[0]}, {k}, {rng.randint(1, 3)}), generator=g).to(dev)"
            return f"{out} = " + rng.choice([f"torch.bmm({a}, {b})", f"{a} @ {b}"])
        return f"{out} = {a} @ torch.randn(({k}, 2), generator=g).to(dev)"

    def op_reduce(self):
        rng = self.rng
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        out = self.fresh()
        d = t.dim()
        dim = rng.randrange(-d, d) if d else None
        keep = rng.choice([True, False])
        fl = t.dtype.is_floating_point
        c = [f"{a}.sum()", f"{a}.sum({dim}, keepdim={keep})" if d else f"{a}.sum()"]
        if t.dtype != torch.bool:
            c += [f"{a}.amax()" if t.numel() else f"{a}.sum()",
                  f"{a}.amax({dim}, keepdim={keep})" if d else f"{a}.sum()",
                  f"{a}.argmax()", f"{a}.argmax({dim}, keepdim={keep})" if d else f"{a}.argmax()"]
        if fl:
            c += [f"{a}.mean()", f"{a}.mean({dim}, keepdim={keep})" if d else f"{a}.mean()",
                  f"{a}.sum(dtype=torch.float64)"]
        else:
            c += [f"{a}.float().mean({dim})" if d else f"{a}.float().mean()"]
        return f"{out} = " + rng.choice(c)

    def op_index(self):
        rng = self.rng
        a = self.pick(lambda u: u.dim() >= 1)
        if a is None:
            return None
        t = self.ns[a]
        out = self.fresh()
        d = t.dim()
        dim = rng.randrange(d)
        n = t.shape[dim]
        idx = [rng.randrange(n) for _ in range(rng.randint(1, 4))]
        c = [f"{out} = {a}.index_select({dim}, T({idx}))",
             f"{out} = {a}[T({idx})]",
             f"{out} = {a}[T({[rng.randrange(-t.shape[0], t.shape[0]) for _ in idx]})]"]
        gshape = list(t.shape)
        gshape[dim] = rng.randint(1, 3)
        gidx = torch.randint(0, n, tuple(gshape), generator=torch.Generator().manual_seed(rng.randrange(1 << 30)))
        c.append(f"{out} = torch.gather({a}, {dim}, T({gidx.tolist()}))")
        mask = self.pick(lambda u: u.dtype == torch.bool and _broadcastable_to(u.shape, t.shape))
        if mask is not None:
            val = "True" if t.dtype == torch.bool else "-3"
            c += [f"{out} = {a}.masked_fill({mask}, {val})"]
            if self.ns[mask].shape == t.shape:
                c += [f"{out} = {a}[{mask}]"]
        if d >= 2:
            j = [rng.randrange(t.shape[1]) for _ in idx]
            c.append(f"{out} = {a}[T({[i % t.shape[0] for i in idx]}), T({j})]")
        return rng.choice(c)

    def op_cat(self):
        rng = self.rng
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        b = self.pick(lambda u: u.shape == t.shape)
        out = self.fresh()
        dim = rng.randrange(t.dim() + 1)
        if rng.random() < 0.5 and t.dim() >= 1:
            return f"{out} = torch.cat([{a}, {b}], {dim % t.dim()})"
        return f"{out} = torch.stack([{a}, {b}], {dim})"

    def op_softmax(self):
        rng = self.rng
        a = self.pick(lambda u: u.dtype.is_floating_point and u.dim() >= 1)
        if a is None:
            return None
        out = self.fresh()
        dim = rng.randrange(-self.ns[a].dim(), self.ns[a].dim())
        return f"{out} = " + rng.choice([f"torch.softmax({a}, {dim})", f"torch.log_softmax({a}, {dim})",
                                        f"{a}.softmax({dim}, dtype=torch.float64)"])

    def op_where(self):
        a = self.pick()
        if a is None:
            return None
        t = self.ns[a]
        cond = self.pick(lambda u: u.dtype == torch.bool and _broadcastable(u.shape, t.shape))
        out = self.fresh()
        if cond is None:
            cond = f"({a} > 0)" if t.dtype != torch.bool else a
        b = self.pick(lambda u: _broadcastable(u.shape, t.shape))
        return f"{out} = torch.where({cond}, {a}, {b})"

    # -- invalid steps ---------------------------------------------------------------------
    def make_invalid(self):
        rng = self.rng
        a = self.pick(lambda u: u.dim() >= 1)
        if a is None:
            return None
        t = self.ns[a]
        out = self.fresh()
        n = t.shape[0]
        c = [
            f"{out} = {a}.index_select(0, T([0, {n + rng.randint(0, 5)}]))",
            f"{out} = {a}[T([{n + rng.randint(0, 3)}])]",
            f"{out} = torch.gather({a}, 0, T({[[n + 2] * (t.shape[1] if t.dim() > 1 else 1)] if t.dim() > 1 else [n + 2]}))",
            f"{out} = {a} + torch.zeros({_fmt(tuple(s + 1 for s in t.shape))}).to(dev)",
            f"{a}.add_(torch.ones({_fmt((n + 1,) + tuple(t.shape[1:]))}).to(dev))",
            f"{out} = {a}.view({t.numel() + 1})",
            f"{out} = {a}.select(0, {n + rng.randint(0, 2)})",
            f"{out} = {a}.transpose(0, {t.dim() + 1})",
            f"{out} = {a}.sum({t.dim() + 1})",
            f"{out} = torch.cat([{a}, {a}.unsqueeze(0)])",
            f"{out} = {a}.float() @ torch.ones(({t.shape[-1] + 1}, 2)).to(dev)",
            f"{out} = torch.mm({a}.double(), torch.ones(({t.shape[-1]}, 2)).to(dev))",
            f"{out} = {a}.masked_fill({a}.long(), 1)",
            f"{a}[T([{n + 1}])] = 1",
            f"{out} = torch.where({a}.float(), {a}, {a})",
            f"{a}.bool().add_(1.5)" if True else "",
            f"{out} = {a}.long().softmax(0)",
        ]
        if t.dtype == torch.int64:
            c += [f"{a}.add_(0.5)", f"{out} = {a}.mean()"]
        if t.dtype == torch.bool:
            c += [f"{out} = -{a}", f"{out} = {a} - {a}"]
        return rng.choice(c)


def _factor(rng, numel):
    """A random shape with `numel` elements, one dim maybe -1."""
    dims = []
    rest = numel
    while rest > 1 and len(dims) < 3:
        divs = [k for k in range(2, rest + 1) if rest % k == 0]
        k = rng.choice(divs)
        dims.append(k)
        rest //= k
    if rest != 1 or not dims:
        dims.append(rest)
    if rng.random() < 0.5:
        dims[rng.randrange(len(dims))] = -1
    return tuple(dims)


def _broadcastable(a, b):
    for x, y in zip(reversed(a), reversed(b)):
        if x != y and x != 1 and y != 1:
            return False
    return True


def _broadcastable_to(src, dst):
    if len(src) > len(dst):
        return False
    for x, y in zip(reversed(src), reversed(dst)):
        if x != y and x != 1:
            return False
    return True


def _partial_alias(u, t):
    """Whether `u` shares memory with `t` without being the very same view of it."""
    if u.untyped_storage().data_ptr() != t.untyped_storage().data_ptr():
        return False
    return not (u.storage_offset() == t.storage_offset() and u.shape == t.shape
                and u.stride() == t.stride())


def _can_cast(src, dst):
    return torch.can_cast(src, dst)


def _make_T(dev):
    def T(values, dtype=torch.int64):
        return torch.tensor(values, dtype=dtype, device=dev)
    return T


class _quiet:
    """Silences PyTorch user warnings while the generator tries candidates."""
    def __enter__(self):
        import warnings
        self._w = warnings.catch_warnings()
        self._w.__enter__()
        warnings.simplefilter("ignore")

    def __exit__(self, *exc):
        self._w.__exit__(*exc)
        return False


def generate(seed):
    """The program of `seed`: (lines, invalid) where invalid says one step must raise on CPU."""
    g = Generator(seed)
    lines = g.build()
    return lines, g.invalid_done
