"""In-repo tiny model families for torch-trn's tiered model tests.

These fill gaps torchvision / timm / transformers leave: recurrent nets
(LSTM, GRU, RNN, packed sequences), 1-D / 3-D / transposed / dilated /
depthwise-separable convolutions, nn.Transformer* with causal and padding
masks, embedding bags, GroupNorm / InstanceNorm / LayerNorm users, an
MLP-mixer block, CTC, graph message passing (index_add), max-unpooling,
pixel shuffle, a VAE with the noise passed in as an input, ...

Every entry is tiny (well under 1M parameters, a CPU step in milliseconds),
built under ``torch.manual_seed(0)`` with dropout 0, float32, train mode, and
fed from ``torch.Generator().manual_seed(seed)``.  All pass the CPU check:

    python3 tests/zoo/repo_models.py [--only REGEX]     # forward+backward+step on CPU

(``zoo_model.check_entry``: also checks determinism of inputs and loss).
"""
from __future__ import annotations

import os
import re
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_model import ZooModel, check_entry, format_record  # noqa: E402

B, T, V, D = 2, 12, 64, 32  # batch, sequence length, vocab, width


def _gen(seed):
    return torch.Generator().manual_seed(int(seed))


def _tokens(g, shape=(B, T), vocab=V):
    return torch.randint(0, vocab, shape, generator=g)


# ----------------------------------------------------------------------------
# recurrent
# ----------------------------------------------------------------------------

class LSTMLM(nn.Module):
    """Embedding + 2-layer LSTM + linear head over tokens (next-token LM)."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.rnn = nn.LSTM(16, D, num_layers=2, batch_first=True, dropout=0.0)
        self.head = nn.Linear(D, V)

    def forward(self, tokens):
        out, _ = self.rnn(self.emb(tokens))
        return self.head(out)


class BiGRUTagger(nn.Module):
    """Bidirectional 2-layer GRU token tagger (time-major input)."""

    def __init__(self, tags=7):
        super().__init__()
        self.emb = nn.Embedding(V, 16)
        self.rnn = nn.GRU(16, D // 2, num_layers=2, bidirectional=True)
        self.head = nn.Linear(D, tags)

    def forward(self, tokens):
        out, h = self.rnn(self.emb(tokens).transpose(0, 1))
        return self.head(out.transpose(0, 1))


class TanhRNNRegressor(nn.Module):
    """Plain tanh RNN over float features, regression from the final hidden state."""

    def __init__(self):
        super().__init__()
        self.rnn = nn.RNN(8, D, num_layers=1, nonlinearity="tanh", batch_first=True)
        self.head = nn.Linear(D, 1)

    def forward(self, x, h0):
        out, h = self.rnn(x, h0)
        return self.head(h[-1]).squeeze(-1)


class PackedLSTMClassifier(nn.Module):
    """LSTM over variable-length sequences via pack_padded_sequence."""

    def __init__(self, classes=5):
        super().__init__()
        self.emb = nn.Embedding(V, 16, padding_idx=0)
        self.rnn = nn.LSTM(16, D, batch_first=True)
        self.head = nn.Linear(D, classes)

    def forward(self, tokens, lengths):
        packed = nn.utils.rnn.pack_padded_sequence(self.emb(tokens), lengths.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        _, (h, _) = self.rnn(packed)
        return self.head(h[-1])


class GRUCellLoop(nn.Module):
    """Explicit time loop over nn.GRUCell (the way decoders are often written)."""

    def __init__(self):
        super().__init__()
        self.cell = nn.GRUCell(8, D)
        self.out = nn.Linear(D, 8)

    def forward(self, x):
        h = x.new_zeros(x.shape[0], D)
        preds = []
        for t in range(x.shape[1]):
            h = self.cell(x[:, t], h)
            preds.append(self.out(h))
        return torch.stack(preds, 1)


# ----------------------------------------------------------------------------
# convolutions
# ----------------------------------------------------------------------------

class AudioConv1d(nn.Module):
    """Conv1d + BatchNorm1d + max/avg pooling over a raw waveform."""

    def __init__(self, classes=6):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv1d(1, 8, 9, stride=2, padding=4), nn.BatchNorm1d(8), nn.ReLU(), nn.MaxPool1d(4),
            nn.Conv1d(8, 16, 5, padding=2), nn.BatchNorm1d(16), nn.ReLU(), nn.AvgPool1d(2),
            nn.Conv1d(16, 16, 3, padding=1), nn.BatchNorm1d(16), nn.ReLU(), nn.AdaptiveAvgPool1d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, wave):
        return self.head(self.net(wave).flatten(1))


class CTCConv1d(nn.Module):
    """Conv1d acoustic model trained with CTC (log_softmax over time)."""

    def __init__(self, symbols=10):
        super().__init__()
        self.net = nn.Sequential(nn.Conv1d(8, D, 3, padding=1), nn.GELU(), nn.Conv1d(D, D, 3, padding=1), nn.GELU())
        self.head = nn.Linear(D, symbols + 1)  # + blank (index 0)

    def forward(self, feats):
        return self.head(self.net(feats).transpose(1, 2)).log_softmax(-1)


class Video3d(nn.Module):
    """Conv3d + BatchNorm3d + MaxPool3d + AdaptiveAvgPool3d over a tiny clip."""

    def __init__(self, classes=5):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv3d(3, 8, 3, padding=1), nn.BatchNorm3d(8), nn.ReLU(), nn.MaxPool3d((1, 2, 2)),
            nn.Conv3d(8, 16, 3, stride=(2, 1, 1), padding=1), nn.BatchNorm3d(16), nn.ReLU(),
            nn.AdaptiveAvgPool3d(1))
        self.head = nn.Linear(16, classes)

    def forward(self, clip):
        return self.head(self.net(clip).flatten(1))


class ConvAutoencoder(nn.Module):
    """Strided Conv2d encoder, ConvTranspose2d decoder (output_padding), sigmoid."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 8, 3, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU())
        self.dec = nn.Sequential(nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
                                 nn.ConvTranspose2d(8, 3, 4, stride=2, padding=1), nn.Sigmoid())

    def forward(self, x):
        return self.dec(self.enc(x))


class DilatedWaveNet(nn.Module):
    """Causal dilated Conv1d stack with gated (tanh * sigmoid) residual units."""

    def __init__(self, ch=16, quant=V):
        super().__init__()
        self.inp = nn.Conv1d(1, ch, 1)
        self.dil = (1, 2, 4, 8)
        self.filt = nn.ModuleList(nn.Conv1d(ch, ch, 2, dilation=d) for d in self.dil)
        self.gate = nn.ModuleList(nn.Conv1d(ch, ch, 2, dilation=d) for d in self.dil)
        self.res = nn.ModuleList(nn.Conv1d(ch, ch, 1) for _ in self.dil)
        self.out = nn.Conv1d(ch, quant, 1)

    def forward(self, wave):
        h = self.inp(wave)
        skip = 0
        for d, f, g, r in zip(self.dil, self.filt, self.gate, self.res):
            x = F.pad(h, (d, 0))
            z = torch.tanh(f(x)) * torch.sigmoid(g(x))
            skip = skip + z
            h = h + r(z)
        return self.out(F.relu(skip))


class DilatedConv2d(nn.Module):
    """Atrous Conv2d pyramid (dilation 1/2/3, concatenated) for dense prediction."""

    def __init__(self, classes=4):
        super().__init__()
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.branches = nn.ModuleList(nn.Conv2d(8, 8, 3, padding=d, dilation=d) for d in (1, 2, 3))
        self.head = nn.Conv2d(24, classes, 1)

    def forward(self, x):
        h = F.relu(self.stem(x))
        return self.head(torch.cat([F.relu(b(h)) for b in self.branches], 1))


class DepthwiseSeparable(nn.Module):
    """MobileNet-style blocks: depthwise 3x3 (groups=C) + pointwise 1x1, BN, ReLU6, residual."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU6())

        def block(stride):
            return nn.Sequential(nn.Conv2d(16, 16, 3, stride=stride, padding=1, groups=16, bias=False),
                                 nn.BatchNorm2d(16), nn.ReLU6(), nn.Conv2d(16, 16, 1, bias=False), nn.BatchNorm2d(16))
        self.b1, self.b2 = block(1), block(2)
        self.head = nn.Linear(16, classes)

    def forward(self, x):
        h = self.stem(x)
        h = F.relu6(h + self.b1(h))
        h = F.relu6(self.b2(h))
        return self.head(h.mean((2, 3)))


class TinyUNet(nn.Module):
    """U-Net: skip concatenation, bilinear upsampling, per-pixel logits."""

    def __init__(self, classes=3):
        super().__init__()
        self.d1 = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.d2 = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.u1 = nn.Sequential(nn.Conv2d(24, 8, 3, padding=1), nn.ReLU())
        self.head = nn.Conv2d(8, classes, 1)

    def forward(self, x):
        a = self.d1(x)
        b = self.d2(a)
        up = F.interpolate(b, size=a.shape[-2:], mode="bilinear", align_corners=False)
        return self.head(self.u1(torch.cat([a, up], 1)))


class SegNetUnpool(nn.Module):
    """MaxPool2d(return_indices) + MaxUnpool2d decoder."""

    def __init__(self, classes=3):
        super().__init__()
        self.enc = nn.Conv2d(3, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, return_indices=True)
        self.unpool = nn.MaxUnpool2d(2)
        self.dec = nn.Conv2d(8, classes, 3, padding=1)

    def forward(self, x):
        h, idx = self.pool(F.relu(self.enc(x)))
        return self.dec(self.unpool(h, idx, output_size=x.shape[-2:]))


class PixelShuffleSR(nn.Module):
    """ESPCN-style 2x super-resolution with nn.PixelShuffle and PReLU."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 5, padding=2), nn.PReLU(16), nn.Conv2d(16, 12, 3, padding=1),
                                 nn.PixelShuffle(2))

    def forward(self, x):
        return self.net(x)


# ----------------------------------------------------------------------------
# attention
# ----------------------------------------------------------------------------

class CausalTransformerLM(nn.Module):
    """nn.TransformerEncoder (pre-norm, GELU) with a causal mask, tied embeddings."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.pos = nn.Parameter(torch.randn(T, D) * 0.02)
        layer = nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.enc = nn.TransformerEncoder(layer, 2, norm=nn.LayerNorm(D), enable_nested_tensor=False)

    def forward(self, tokens):
        L = tokens.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=tokens.device)
        h = self.enc(self.emb(tokens) + self.pos[:L], mask=mask, is_causal=True)
        return h @ self.emb.weight.t()


class GQADecoderLM(nn.Module):
    """Llama-style decoder block: RMS norm, 4 query heads sharing 2 key/value heads (the kv heads
    expanded and copied, as transformers' repeat_kv does), causal mask, SwiGLU MLP."""

    def __init__(self, heads=4, kv_heads=2):
        super().__init__()
        self.h, self.kv, self.hd = heads, kv_heads, D // heads
        self.emb = nn.Embedding(V, D)
        self.norm1, self.norm2 = nn.RMSNorm(D), nn.RMSNorm(D)
        self.q = nn.Linear(D, D, bias=False)
        self.k = nn.Linear(D, kv_heads * self.hd, bias=False)
        self.v = nn.Linear(D, kv_heads * self.hd, bias=False)
        self.o = nn.Linear(D, D, bias=False)
        self.gate, self.up = nn.Linear(D, 2 * D, bias=False), nn.Linear(D, 2 * D, bias=False)
        self.down = nn.Linear(2 * D, D, bias=False)
        self.head = nn.Linear(D, V, bias=False)

    def _repeat_kv(self, x):  # [B, kv, L, hd] -> [B, h, L, hd]
        b, kv, L, hd = x.shape
        return x[:, :, None].expand(b, kv, self.h // kv, L, hd).reshape(b, self.h, L, hd)

    def forward(self, tokens):
        b, L = tokens.shape
        x = self.emb(tokens)
        h = self.norm1(x)
        q = self.q(h).view(b, L, self.h, self.hd).transpose(1, 2)
        k = self._repeat_kv(self.k(h).view(b, L, self.kv, self.hd).transpose(1, 2))
        v = self._repeat_kv(self.v(h).view(b, L, self.kv, self.hd).transpose(1, 2))
        scores = q @ k.transpose(-1, -2) / self.hd ** 0.5
        mask = torch.ones(L, L, dtype=torch.bool, device=tokens.device).tril()
        att = scores.masked_fill(~mask, float("-inf")).softmax(-1)
        x = x + self.o((att @ v).transpose(1, 2).reshape(b, L, D))
        h = self.norm2(x)
        x = x + self.down(F.silu(self.gate(h)) * self.up(h))
        return self.head(x)


class Seq2SeqTransformer(nn.Module):
    """Encoder + nn.TransformerDecoder (causal self-attn, cross-attn to memory, padding masks)."""

    def __init__(self):
        super().__init__()
        self.src_emb = nn.Embedding(V, D)
        self.tgt_emb = nn.Embedding(V, D)
        self.enc = nn.TransformerEncoder(nn.TransformerEncoderLayer(D, 4, 64, dropout=0.0, batch_first=True), 1,
                                         enable_nested_tensor=False)
        self.dec = nn.TransformerDecoder(nn.TransformerDecoderLayer(D, 4, 64, dropout=0.0, batch_first=True), 2)
        self.head = nn.Linear(D, V)

    def forward(self, src, tgt, src_pad):
        mem = self.enc(self.src_emb(src), src_key_padding_mask=src_pad)
        L = tgt.shape[1]
        mask = nn.Transformer.generate_square_subsequent_mask(L, device=tgt.device)
        h = self.dec(self.tgt_emb(tgt), mem, tgt_mask=mask, tgt_is_causal=True, memory_key_padding_mask=src_pad)
        return self.head(h)


class MHAPaddingClassifier(nn.Module):
    """nn.MultiheadAttention with key_padding_mask, masked mean pooling."""

    def __init__(self, classes=4):
        super().__init__()
        self.proj = nn.Linear(8, D)
        self.attn = nn.MultiheadAttention(D, 4, dropout=0.0, batch_first=True)
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, classes)

    def forward(self, x, pad):
        h = self.proj(x)
        a, _ = self.attn(h, h, h, key_padding_mask=pad, need_weights=False)
        h = self.norm(h + a)
        keep = (~pad).unsqueeze(-1).float()
        return self.head((h * keep).sum(1) / keep.sum(1))


class MixerBlock(nn.Module):
    def __init__(self, tokens, dim):
        super().__init__()
        self.n1, self.n2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.tok = nn.Sequential(nn.Linear(tokens, 2 * tokens), nn.GELU(), nn.Linear(2 * tokens, tokens))
        self.ch = nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))

    def forward(self, x):
        x = x + self.tok(self.n1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ch(self.n2(x))


class MLPMixer(nn.Module):
    """Patch embedding + 2 mixer blocks (token-mixing and channel-mixing MLPs)."""

    def __init__(self, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, D, 4, stride=4)
        self.blocks = nn.Sequential(MixerBlock(16, D), MixerBlock(16, D))
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, classes)

    def forward(self, x):
        h = self.patch(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(h)).mean(1))


# ----------------------------------------------------------------------------
# embeddings, norms, misc
# ----------------------------------------------------------------------------

class EmbeddingBagClassifier(nn.Module):
    """nn.EmbeddingBag (mean, offsets) + weighted sum bag (per_sample_weights) -> linear."""

    def __init__(self, classes=3):
        super().__init__()
        self.bag = nn.EmbeddingBag(V, 16, mode="mean")
        self.wbag = nn.EmbeddingBag(V, 16, mode="sum")
        self.head = nn.Linear(32, classes)

    def forward(self, ids, offsets, weights):
        return self.head(torch.cat([self.bag(ids, offsets), self.wbag(ids, offsets, per_sample_weights=weights)], 1))


class GroupNormCNN(nn.Module):
    """Conv + GroupNorm + SiLU stack (diffusion / detection-head style)."""

    def __init__(self, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.GroupNorm(4, 16), nn.SiLU(),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.GroupNorm(8, 32), nn.SiLU(),
                                 nn.AdaptiveAvgPool2d(1))
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(self.net(x).flatten(1))


class InstanceNormStyle(nn.Module):
    """Style-transfer net: reflection pad, InstanceNorm2d(affine), nearest upsample, tanh."""

    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(
            nn.ReflectionPad2d(2), nn.Conv2d(3, 8, 5), nn.InstanceNorm2d(8, affine=True), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.InstanceNorm2d(16, affine=True), nn.ReLU(),
            nn.Upsample(scale_factor=2, mode="nearest"), nn.ReflectionPad2d(1), nn.Conv2d(16, 3, 3), nn.Tanh())

    def forward(self, x):
        return self.net(x)


class LayerNormMLP(nn.Module):
    """Residual MLP over tabular features with LayerNorm, ELU, a Bilinear interaction."""

    def __init__(self, features=12, classes=4):
        super().__init__()
        self.inp = nn.Linear(features, D)
        self.blocks = nn.ModuleList(nn.Sequential(nn.LayerNorm(D), nn.Linear(D, D), nn.ELU()) for _ in range(2))
        self.bil = nn.Bilinear(D, features, 8)
        self.head = nn.Linear(D + 8, classes)

    def forward(self, x):
        h = self.inp(x)
        for blk in self.blocks:
            h = h + blk(h)
        return self.head(torch.cat([h, self.bil(h, x)], 1))


class GraphConv(nn.Module):
    """2-layer message passing over an edge list with index_select + index_add_ (GCN-style)."""

    def __init__(self, feats=8, classes=3):
        super().__init__()
        self.l1, self.l2 = nn.Linear(feats, 16), nn.Linear(16, classes)

    @staticmethod
    def propagate(h, src, dst):
        deg = torch.zeros(h.shape[0], device=h.device).index_add_(0, dst, torch.ones_like(dst, dtype=h.dtype)) + 1
        agg = torch.zeros_like(h).index_add_(0, dst, h.index_select(0, src))
        return (agg + h) / deg.unsqueeze(-1)

    def forward(self, x, src, dst):
        h = F.relu(self.l1(self.propagate(x, src, dst)))
        return self.l2(self.propagate(h, src, dst))


class VAE(nn.Module):
    """MLP VAE; the reparameterisation noise is an input so the step is deterministic."""

    def __init__(self, features=16, latent=4):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(features, D), nn.Softplus())
        self.mu, self.logvar = nn.Linear(D, latent), nn.Linear(D, latent)
        self.dec = nn.Sequential(nn.Linear(latent, D), nn.Softplus(), nn.Linear(D, features))

    def forward(self, x, eps):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.dec(z), mu, logvar


# ----------------------------------------------------------------------------
# entries: name -> (module class, input kind, make_inputs(g) -> dict, loss(model, inputs))
# ----------------------------------------------------------------------------

def _ce_seq(logits, y):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), y.reshape(-1))


def _lm_inputs(g):
    tok = _tokens(g, (B, T + 1))
    return {"tokens": tok[:, :-1].contiguous(), "targets": tok[:, 1:].contiguous()}


def _img(g, size=16, b=B):
    return torch.randn(b, 3, size, size, generator=g)


def _padded_tokens(g):
    lengths = torch.tensor([T, T - 5])
    tok = _tokens(g, (B, T), V - 1) + 1
    tok[1, T - 5:] = 0
    return {"tokens": tok, "lengths": lengths, "y": torch.randint(0, 5, (B,), generator=g)}


def _ctc_inputs(g):
    return {"feats": torch.randn(B, 8, 20, generator=g), "targets": torch.randint(1, 11, (B, 6), generator=g),
            "input_lengths": torch.tensor([20, 17]), "target_lengths": torch.tensor([6, 4])}


def _ctc_loss(m, i):
    logp = m(i["feats"]).transpose(0, 1)  # [T, B, C]
    return F.ctc_loss(logp, i["targets"], i["input_lengths"], i["target_lengths"], blank=0, zero_infinity=True)


def _seq2seq_inputs(g):
    pad = torch.zeros(B, 10, dtype=torch.bool)
    pad[1, 7:] = True
    tgt = _tokens(g, (B, T + 1))
    return {"src": _tokens(g, (B, 10)), "src_pad": pad, "tgt": tgt[:, :-1].contiguous(), "y": tgt[:, 1:].contiguous()}


def _mha_inputs(g):
    pad = torch.zeros(B, T, dtype=torch.bool)
    pad[0, 9:] = True
    pad[1, 4:] = True
    return {"x": torch.randn(B, T, 8, generator=g), "pad": pad, "y": torch.randint(0, 4, (B,), generator=g)}


def _bag_inputs(g):
    ids = _tokens(g, (11,))
    return {"ids": ids, "offsets": torch.tensor([0, 4]), "weights": torch.rand(11, generator=g),
            "y": torch.randint(0, 3, (B,), generator=g)}


def _graph_inputs(g):
    n, e = 10, 24
    return {"x": torch.randn(n, 8, generator=g), "src": torch.randint(0, n, (e,), generator=g),
            "dst": torch.randint(0, n, (e,), generator=g), "y": torch.randint(0, 3, (n,), generator=g)}


def _vae_loss(m, i):
    recon, mu, logvar = m(i["x"], i["eps"])
    kl = -0.5 * torch.mean(1 + logvar - mu.pow(2) - logvar.exp())
    return F.mse_loss(recon, i["x"]) + kl


ENTRIES = {
    "lstm_lm": (LSTMLM, "tokens", _lm_inputs, lambda m, i: _ce_seq(m(i["tokens"]), i["targets"])),
    "gru_bidir_tagger": (BiGRUTagger, "tokens",
                         lambda g: {"tokens": _tokens(g), "tags": torch.randint(0, 7, (B, T), generator=g)},
                         lambda m, i: _ce_seq(m(i["tokens"]), i["tags"])),
    "rnn_tanh_regressor": (TanhRNNRegressor, "sequence",
                           lambda g: {"x": torch.randn(B, 10, 8, generator=g), "h0": torch.zeros(1, B, D),
                                      "y": torch.randn(B, generator=g)},
                           lambda m, i: F.mse_loss(m(i["x"], i["h0"]), i["y"])),
    "lstm_packed_classifier": (PackedLSTMClassifier, "tokens", _padded_tokens,
                               lambda m, i: F.cross_entropy(m(i["tokens"], i["lengths"]), i["y"])),
    "grucell_loop": (GRUCellLoop, "sequence", lambda g: {"x": torch.randn(B, 6, 8, generator=g)},
                     lambda m, i: F.smooth_l1_loss(m(i["x"])[:, :-1], i["x"][:, 1:])),
    "conv1d_audio": (AudioConv1d, "audio",
                     lambda g: {"wave": torch.randn(B, 1, 256, generator=g), "y": torch.randint(0, 6, (B,), generator=g)},
                     lambda m, i: F.cross_entropy(m(i["wave"]), i["y"])),
    "conv1d_ctc": (CTCConv1d, "audio", _ctc_inputs, _ctc_loss),
    "conv3d_video": (Video3d, "video",
                     lambda g: {"clip": torch.randn(B, 3, 4, 16, 16, generator=g),
                                "y": torch.randint(0, 5, (B,), generator=g)},
                     lambda m, i: F.cross_entropy(m(i["clip"]), i["y"])),
    "convtranspose_autoencoder": (ConvAutoencoder, "image", lambda g: {"x": torch.rand(B, 3, 16, 16, generator=g)},
                                  lambda m, i: F.binary_cross_entropy(m(i["x"]), i["x"])),
    "dilated_wavenet": (DilatedWaveNet, "audio",
                        lambda g: {"wave": torch.rand(B, 1, 64, generator=g) * 2 - 1,
                                   "y": torch.randint(0, V, (B, 64), generator=g)},
                        lambda m, i: F.cross_entropy(m(i["wave"]), i["y"])),
    "dilated_conv2d": (DilatedConv2d, "image",
                       lambda g: {"x": _img(g), "y": torch.randint(0, 4, (B, 16, 16), generator=g)},
                       lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "depthwise_separable": (DepthwiseSeparable, "image",
                            lambda g: {"x": _img(g), "y": torch.randint(0, 10, (B,), generator=g)},
                            lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "unet_tiny": (TinyUNet, "image", lambda g: {"x": _img(g), "y": torch.randint(0, 3, (B, 16, 16), generator=g)},
                  lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "segnet_maxunpool": (SegNetUnpool, "image",
                         lambda g: {"x": _img(g), "y": torch.randint(0, 3, (B, 16, 16), generator=g)},
                         lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "pixelshuffle_sr": (PixelShuffleSR, "image",
                        lambda g: {"lo": _img(g, 8), "hi": torch.randn(B, 3, 16, 16, generator=g)},
                        lambda m, i: F.l1_loss(m(i["lo"]), i["hi"])),
    "transformer_causal_lm": (CausalTransformerLM, "tokens", _lm_inputs,
                              lambda m, i: _ce_seq(m(i["tokens"]), i["targets"])),
    "gqa_decoder_lm": (GQADecoderLM, "tokens", _lm_inputs, lambda m, i: _ce_seq(m(i["tokens"]), i["targets"])),
    "transformer_seq2seq": (Seq2SeqTransformer, "tokens", _seq2seq_inputs,
                            lambda m, i: _ce_seq(m(i["src"], i["tgt"], i["src_pad"]), i["y"])),
    "mha_key_padding": (MHAPaddingClassifier, "sequence", _mha_inputs,
                        lambda m, i: F.cross_entropy(m(i["x"], i["pad"]), i["y"])),
    "mlp_mixer": (MLPMixer, "image", lambda g: {"x": _img(g), "y": torch.randint(0, 10, (B,), generator=g)},
                  lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "embedding_bag": (EmbeddingBagClassifier, "tokens", _bag_inputs,
                      lambda m, i: F.cross_entropy(m(i["ids"], i["offsets"], i["weights"]), i["y"])),
    "groupnorm_cnn": (GroupNormCNN, "image", lambda g: {"x": _img(g), "y": torch.randint(0, 10, (B,), generator=g)},
                      lambda m, i: F.cross_entropy(m(i["x"]), i["y"])),
    "instancenorm_style": (InstanceNormStyle, "image",
                           lambda g: {"x": _img(g), "target": torch.rand(B, 3, 16, 16, generator=g) * 2 - 1},
                           lambda m, i: F.mse_loss(m(i["x"]), i["target"])),
    "layernorm_mlp": (LayerNormMLP, "features",
                      lambda g: {"x": torch.randn(8, 12, generator=g), "y": torch.randint(0, 4, (8,), generator=g)},
                      lambda m, i: F.nll_loss(F.log_softmax(m(i["x"]), -1), i["y"])),
    "graph_conv": (GraphConv, "other", _graph_inputs,
                   lambda m, i: F.cross_entropy(m(i["x"], i["src"], i["dst"]), i["y"])),
    "vae_mlp": (VAE, "features",
                lambda g: {"x": torch.randn(B * 2, 16, generator=g), "eps": torch.randn(B * 2, 4, generator=g)},
                _vae_loss),
}


def _entry(name):
    cls, kind, make, loss = ENTRIES[name]

    def build():
        torch.manual_seed(0)
        return cls().float().train()

    return ZooModel(f"repo/{name}", "repo", kind, build, lambda seed: make(_gen(seed)), loss)


def models() -> list:
    return sorted((_entry(n) for n in ENTRIES), key=lambda zm: zm.name)


def unbuildable() -> list:
    return []


def main(argv=None):
    import argparse
    import time
    p = argparse.ArgumentParser(description="CPU forward+backward check of the repo zoo models")
    p.add_argument("--only", default=None)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    t0, bad = time.process_time(), 0
    for zm in models():
        if args.only and not re.search(args.only, zm.name):
            continue
        rec = check_entry(zm, timeout=60)
        bad += rec["status"] != "pass"
        print(format_record(rec), flush=True)
    print(f"{bad} failed; {time.process_time() - t0:.1f}s CPU")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
