"""Small deterministic models and batch makers, shared by tests, examples and benches.

Every model is tiny (one train step is a few ms on the CPU) and built from a seed, so the same
weights can be made twice or copied with ``load_state_dict``. Batches come from a seeded
``torch.Generator`` on the CPU, so the device run and the CPU reference see identical data.

    from models import MODELS, make_model, make_batches
    model = make_model("gpt")                 # seeded
    for x, y in make_batches("gpt", steps=5):  # CPU tensors; move them yourself
        loss = model.loss(x, y)
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# --------------------------------------------------------------------------------------------
# MLP
# --------------------------------------------------------------------------------------------
class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=32, n_classes=5):
        super().__init__()
        self.fc1 = nn.Linear(d_in, hidden)
        self.fc2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, n_classes)

    def forward(self, x):
        x = F.relu(self.fc1(x))
        x = torch.tanh(self.fc2(x))
        return self.out(x)

    def loss(self, x, y):
        return F.cross_entropy(self(x), y)


def mlp_batches(steps, batch=8, d_in=16, n_classes=5, seed=1):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, d_in, generator=g),
             torch.randint(0, n_classes, (batch,), generator=g)) for _ in range(steps)]


# --------------------------------------------------------------------------------------------
# CNN: conv2d, batchnorm2d, relu, max-pool, avg-pool, linear
# --------------------------------------------------------------------------------------------
class SmallCNN(nn.Module):
    def __init__(self, in_ch=3, n_classes=4):
        super().__init__()
        # No conv bias before batchnorm (as in ResNets): BN removes it, so its gradient is pure
        # rounding noise that Adam amplifies, and any two correct implementations disagree on it.
        self.conv1 = nn.Conv2d(in_ch, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.fc = nn.Linear(16 * 2 * 2, n_classes)

    def forward(self, x):                      # x: [B, 3, 8, 8]
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.max_pool2d(x, 2)                 # [B, 8, 4, 4]
        x = F.relu(self.bn2(self.conv2(x)))
        x = F.avg_pool2d(x, 2)                 # [B, 16, 2, 2]
        return self.fc(torch.flatten(x, 1))

    def loss(self, x, y):
        return F.cross_entropy(self(x), y)


def cnn_batches(steps, batch=4, in_ch=3, hw=8, n_classes=4, seed=2):
    g = torch.Generator().manual_seed(seed)
    return [(torch.randn(batch, in_ch, hw, hw, generator=g),
             torch.randint(0, n_classes, (batch,), generator=g)) for _ in range(steps)]


# --------------------------------------------------------------------------------------------
# GPT-style transformer
# --------------------------------------------------------------------------------------------
class CausalSelfAttention(nn.Module):
    """Causal self-attention. ``sdpa=False``: explicit matmul / mask / softmax / matmul;
    ``sdpa=True``: ``F.scaled_dot_product_attention(is_causal=True)``."""

    def __init__(self, d_model, n_heads, block_size, sdpa=False):
        super().__init__()
        assert d_model % n_heads == 0
        self.n_heads, self.d_head, self.sdpa = n_heads, d_model // n_heads, sdpa
        # No bias on the key projection (as in Whisper): softmax is invariant to it, so its
        # gradient is rounding noise that Adam would amplify into lr-sized, run-dependent steps.
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model, bias=False)
        self.v = nn.Linear(d_model, d_model)
        self.proj = nn.Linear(d_model, d_model)
        mask = torch.tril(torch.ones(block_size, block_size, dtype=torch.bool))
        self.register_buffer("mask", mask.view(1, 1, block_size, block_size), persistent=False)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.q(x), self.k(x), self.v(x)
        q = q.view(B, T, self.n_heads, self.d_head).transpose(1, 2)   # [B, H, T, Dh]
        k = k.view(B, T, self.n_heads, self.d_head).transpose(1, 2)
        v = v.view(B, T, self.n_heads, self.d_head).transpose(1, 2)
        if self.sdpa:
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.d_head))
            att = att.masked_fill(~self.mask[:, :, :T, :T], float("-inf"))
            att = F.softmax(att, dim=-1)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, d_model, n_heads, block_size, sdpa):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, n_heads, block_size, sdpa)
        self.ln2 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.fc_out = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.fc_out(F.gelu(self.fc(self.ln2(x))))
        return x


class TinyGPT(nn.Module):
    def __init__(self, vocab=64, block_size=16, d_model=32, n_heads=4, n_layers=2, sdpa=False):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab, d_model)
        self.pos_emb = nn.Embedding(block_size, d_model)
        self.blocks = nn.ModuleList(
            [Block(d_model, n_heads, block_size, sdpa) for _ in range(n_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, idx):                    # idx: [B, T] int64
        B, T = idx.shape
        pos = torch.arange(T, device=idx.device)
        x = self.tok_emb(idx) + self.pos_emb(pos)
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.ln_f(x))         # [B, T, vocab]

    def loss(self, idx, targets):
        logits = self(idx)
        return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))


def gpt_batches(steps, batch=4, block_size=16, vocab=64, seed=3):
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(steps):
        seq = torch.randint(0, vocab, (batch, block_size + 1), generator=g)
        out.append((seq[:, :-1].contiguous(), seq[:, 1:].contiguous()))
    return out


# --------------------------------------------------------------------------------------------
# Registry
# --------------------------------------------------------------------------------------------
MODELS = {
    "mlp": (MLP, mlp_batches),
    "cnn": (SmallCNN, cnn_batches),
    "gpt": (lambda: TinyGPT(sdpa=False), gpt_batches),
    "gpt_sdpa": (lambda: TinyGPT(sdpa=True), gpt_batches),
}


def make_model(name, seed=0):
    """A freshly initialised model (on the CPU) from a fixed seed."""
    torch.manual_seed(seed)
    return MODELS[name][0]()


def make_batches(name, steps):
    """``steps`` (input, target) pairs of CPU tensors, the same on every call."""
    return MODELS[name][1](steps)


def clone_to(name, model, device):
    """A second ``name`` model on ``device`` whose weights and buffers are copied from
    ``model`` (through its state_dict), so both start bit-identical."""
    twin = make_model(name, seed=12345)        # a different init: the copy must overwrite it
    twin.load_state_dict(model.state_dict())
    return twin.to(device)
