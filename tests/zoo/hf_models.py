"""Tiny Hugging Face transformers models for torch-trn's tiered model tests.

Approach
--------
* The universe is every model type that appears in one of the task mappings of
  ``transformers.models.auto.modeling_auto`` (``MODEL_FOR_*_MAPPING_NAMES``) or
  in ``MODEL_MAPPING_NAMES`` (bare backbones, task ``base``).
* For each model type the candidate tasks are tried in ``TASKS`` order
  (seq2seq-lm, masked-lm, causal-lm, sequence classification, ..., base);
  the first task that passed the CPU check becomes that type's entry.  A few
  ``EXTRA_ENTRIES`` add other heads (token classification, QA, ...).
* Configs are built with ``AutoConfig.for_model`` and then shrunk generically
  (hidden sizes, layers, heads, vocab, image size, experts, ..., recursively
  through sub-configs such as text_config/vision_config), all dropout/drop
  path/layerdrop/masking probabilities are set to 0, special token ids are
  remapped into the tiny vocab, and per-type fixes from ``hf_configs.py`` are
  applied on top.  Weights are random (``torch.manual_seed(0)``); nothing is
  ever downloaded.
* Synthetic inputs are derived from ``model_cls.main_input_name``, the forward
  signature and the config; labels are added for heads that compute a loss.
  ``loss`` is ``output.loss`` when the model returns one, else the sum of the
  means of every floating output tensor that requires grad.
* Which (type, task) pairs pass is *data*: ``hf_configs.RESULTS`` was produced
  by ``python tests/zoo/hf_models.py --check --out FILE``, which builds every
  candidate in worker subprocesses, runs loss+backward on CPU (one thread),
  checks that a second loss is bit-identical (train mode, dropout 0), that two
  builds give identical weights, that some gradient is nonzero and that the
  warm forward+backward takes < 3 s CPU, and records the outcome (the
  exception type and message, flattened to one line, on failure).  ``models()`` only returns recorded passes;
  ``unbuildable()`` lists the rest.  Nothing is built at import time, and
  transformers is imported lazily (import of this module is ~instant).

Usage: ``python tests/zoo/hf_models.py [--only REGEX] [--jobs N]`` re-checks
the current entries and prints one line per model plus totals.  After a
transformers upgrade, re-run ``--check`` and re-bake RESULTS (types not in
RESULTS are reported by unbuildable() as "not checked").
"""
from __future__ import annotations

import copy
import functools
import inspect
import re
from dataclasses import dataclass
from typing import Any, Callable

try:  # package import (tests.zoo.hf_models) or plain script / sys.path import
    from . import hf_configs as _hc
except ImportError:  # pragma: no cover
    import hf_configs as _hc  # type: ignore

B, SEQ, VOCAB, IMG = 2, 12, 128, 32


@dataclass
class ZooModel:
    name: str                 # "hf/<model_type>/<task>"
    family: str               # "hf"
    input_kind: str           # tokens|image|audio|video|tokens+image|features|other
    build: Callable[[], Any]  # -> torch.nn.Module (CPU, float32, train mode, seeded)
    make_inputs: Callable[[int], dict]
    loss: Callable[[Any, dict], Any]


# (task slug, mapping name) in preference order for a model type's main entry.
TASKS = [
    ("seq2seq-lm", "MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES"),
    ("speech-seq2seq", "MODEL_FOR_SPEECH_SEQ_2_SEQ_MAPPING_NAMES"),
    ("masked-lm", "MODEL_FOR_MASKED_LM_MAPPING_NAMES"),
    ("causal-lm", "MODEL_FOR_CAUSAL_LM_MAPPING_NAMES"),
    ("sequence-classification", "MODEL_FOR_SEQUENCE_CLASSIFICATION_MAPPING_NAMES"),
    ("zero-shot-image-classification", "MODEL_FOR_ZERO_SHOT_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
    ("image-classification", "MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES"),
    ("ctc", "MODEL_FOR_CTC_MAPPING_NAMES"),
    ("audio-classification", "MODEL_FOR_AUDIO_CLASSIFICATION_MAPPING_NAMES"),
    ("image-text-to-text", "MODEL_FOR_IMAGE_TEXT_TO_TEXT_MAPPING_NAMES"),
    ("multimodal-lm", "MODEL_FOR_MULTIMODAL_LM_MAPPING_NAMES"),
    ("video-classification", "MODEL_FOR_VIDEO_CLASSIFICATION_MAPPING_NAMES"),
    ("semantic-segmentation", "MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES"),
    ("depth-estimation", "MODEL_FOR_DEPTH_ESTIMATION_MAPPING_NAMES"),
    ("object-detection", "MODEL_FOR_OBJECT_DETECTION_MAPPING_NAMES"),
    ("universal-segmentation", "MODEL_FOR_UNIVERSAL_SEGMENTATION_MAPPING_NAMES"),
    ("masked-image-modeling", "MODEL_FOR_MASKED_IMAGE_MODELING_MAPPING_NAMES"),
    ("token-classification", "MODEL_FOR_TOKEN_CLASSIFICATION_MAPPING_NAMES"),
    ("question-answering", "MODEL_FOR_QUESTION_ANSWERING_MAPPING_NAMES"),
    ("multiple-choice", "MODEL_FOR_MULTIPLE_CHOICE_MAPPING_NAMES"),
    ("audio-frame-classification", "MODEL_FOR_AUDIO_FRAME_CLASSIFICATION_MAPPING_NAMES"),
    ("audio-xvector", "MODEL_FOR_AUDIO_XVECTOR_MAPPING_NAMES"),
    ("time-series-prediction", "MODEL_FOR_TIME_SERIES_PREDICTION_MAPPING_NAMES"),
    ("time-series-classification", "MODEL_FOR_TIME_SERIES_CLASSIFICATION_MAPPING_NAMES"),
    ("text-to-waveform", "MODEL_FOR_TEXT_TO_WAVEFORM_MAPPING_NAMES"),
    ("text-to-spectrogram", "MODEL_FOR_TEXT_TO_SPECTROGRAM_MAPPING_NAMES"),
    ("backbone", "MODEL_FOR_BACKBONE_MAPPING_NAMES"),
    ("pretraining", "MODEL_FOR_PRETRAINING_MAPPING_NAMES"),
    ("base", "MODEL_MAPPING_NAMES"),
]
# Any other MODEL_FOR_*_MAPPING_NAMES is tried after these, then "base".
MAX_CANDIDATES = 4  # tasks tried per model type before giving up ("base" always tried)

# Extra heads beyond each type's main entry.
EXTRA_ENTRIES = [
    ("bert", "token-classification"), ("bert", "question-answering"),
    ("bert", "multiple-choice"), ("bert", "sequence-classification"),
    ("roberta", "token-classification"), ("distilbert", "question-answering"),
    ("gpt2", "sequence-classification"), ("gpt2", "token-classification"),
    ("llama", "sequence-classification"), ("llama", "question-answering"),
    ("t5", "question-answering"), ("vit", "masked-image-modeling"),
    ("wav2vec2", "audio-classification"), ("wav2vec2", "audio-frame-classification"),
    ("wav2vec2", "audio-xvector"), ("whisper", "audio-classification"),
    ("clip", "image-classification"), ("mobilevit", "semantic-segmentation"),
]

_TEXT_TASKS = {"causal-lm", "masked-lm", "seq2seq-lm", "sequence-classification", "token-classification",
               "question-answering", "multiple-choice"}
_LM_TASKS = {"causal-lm", "masked-lm", "seq2seq-lm", "speech-seq2seq", "image-text-to-text", "multimodal-lm"}
_KIND_BY_TASK = {
    "image-classification": "image", "semantic-segmentation": "image", "depth-estimation": "image",
    "object-detection": "image", "universal-segmentation": "image", "masked-image-modeling": "image",
    "video-classification": "video", "zero-shot-image-classification": "tokens+image",
    "time-series-prediction": "features", "time-series-classification": "features",
}


# --------------------------------------------------------------------------- mappings
@functools.lru_cache(maxsize=None)
def _mappings() -> dict[str, dict[str, str]]:
    from transformers.models.auto import modeling_auto as ma

    out = {slug: dict(getattr(ma, attr, {})) for slug, attr in TASKS}
    known = {attr for _, attr in TASKS} | {"CONFIG_MAPPING_NAMES"}
    for attr in sorted(dir(ma)):
        if attr.startswith("MODEL_FOR_") and attr.endswith("_MAPPING_NAMES") and attr not in known:
            slug = attr[len("MODEL_FOR_"):-len("_MAPPING_NAMES")].lower().replace("_", "-")
            out[slug] = dict(getattr(ma, attr))
    out["base"] = out.pop("base")  # keep "base" last
    return out


def model_types() -> list[str]:
    """Every model type in the auto task mappings (plus bare MODEL_MAPPING_NAMES)."""
    return sorted({t for m in _mappings().values() for t in m})


def candidate_tasks(model_type: str) -> list[str]:
    tasks, seen = [], set()
    for s, m in _mappings().items():  # one task per distinct model class
        if model_type in m and str(m[model_type]) not in seen and (len(tasks) < MAX_CANDIDATES or s == "base"):
            seen.add(str(m[model_type]))
            tasks.append(s)
    return tasks


def _model_class(model_type: str, task: str):
    import transformers

    name = _mappings()[task][model_type]
    if isinstance(name, (tuple, list)):
        name = name[0]
    return getattr(transformers, name)


# --------------------------------------------------------------------------- configs
_INT_TARGETS, _LIST_WIDTHS, _LIST_DEPTHS, _LIST_HEADS = (
    _hc.INT_TARGETS, _hc.LIST_WIDTHS, _hc.LIST_DEPTHS, _hc.LIST_HEADS)
_RANDOM_KEY = re.compile(r"(dropout|drop_rate|drop_path|layerdrop|layer_drop|jitter|noise_std|pdrop|^drop_|_drop$|"
                         r"mask_time_prob|mask_feature_prob|_drop_prob|drop_prob)")
_TOKEN_KEY = re.compile(r"(token_id|token_index|token_ids|_token)$")


def _width(x: int) -> int:
    """Same map for every channel list, so equalities between lists survive."""
    return x if x <= 16 else max(16, round(x / 128) * 16)


def _shrink_dict(d: dict, specials: dict) -> None:
    """In-place generic shrink of a config dict (recursing into sub-config dicts)."""
    old_layers = {k: d.get(k) for k in ("num_hidden_layers", "num_layers", "n_layer", "depth")
                  if isinstance(d.get(k), int)}
    for k, v in list(d.items()):
        if not isinstance(k, str):
            continue
        if isinstance(v, dict) and k not in ("id2label", "label2id", "rope_scaling", "rope_parameters"):
            _shrink_dict(v, specials)
        elif isinstance(v, bool) or (v is None and "dropout" not in k):
            continue
        elif _RANDOM_KEY.search(k) and (isinstance(v, float) or (v is None and "dropout" in k)):
            d[k] = 0.0
        elif _RANDOM_KEY.search(k) and isinstance(v, (list, tuple)) and v and all(isinstance(x, float) for x in v):
            d[k] = [0.0] * len(v)
        elif isinstance(v, int) and _TOKEN_KEY.search(k):
            if v >= VOCAB - 24:
                d[k] = specials.setdefault(v, VOCAB - 1 - len(specials))
        elif isinstance(v, (list, tuple)) and v and _TOKEN_KEY.search(k) and all(
                isinstance(x, int) and not isinstance(x, bool) for x in v):
            d[k] = [specials.setdefault(x, VOCAB - 1 - len(specials)) if x >= VOCAB - 24 else x for x in v]
        elif isinstance(v, int) and k in _INT_TARGETS and v > _INT_TARGETS[k]:
            d[k] = _INT_TARGETS[k]
        elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
            if k in _LIST_WIDTHS or k.endswith(("_channels", "hidden_sizes")):
                d[k] = [_width(x) for x in v]
            elif k in _LIST_DEPTHS:
                d[k] = [min(x, 1) for x in v]
            elif k in _LIST_HEADS:
                d[k] = [max(1, min(2, x // v[0])) for x in v]
            elif k == "image_size":
                d[k] = [min(x, IMG) for x in v]
    _fix_rope(d)
    hs = d.get("hidden_size") or d.get("d_model")
    for nh, hd, ex in (("num_heads", "head_dim", "expand"), ("mamba_n_heads", "mamba_d_head", "mamba_expand"),
                       ("mamba_num_heads", "mamba_head_dim", "mamba_expand")):
        if isinstance(hs, int) and all(isinstance(d.get(x), int) for x in (nh, hd)) and d.get(ex):
            d[nh] = max(1, int(hs * d[ex]) // d[hd])
    if "d_head" in d and isinstance(d.get("n_head"), int):
        d["d_head"] = (d.get("d_model") or 64) // d["n_head"]
    for k, v in list(d.items()):  # vision_feature_layer(s) must index the shrunk tower
        if isinstance(k, str) and "feature_layer" in k:
            if isinstance(v, int) and not isinstance(v, bool) and (v >= 2 or v < -2):
                d[k] = -1 if v < 0 else 1
            elif isinstance(v, (list, tuple)) and v and all(isinstance(x, int) for x in v):
                d[k] = [-1 - (i % 2) if x < 0 else (i % 2) for i, x in enumerate(v)]
    if "kv_lora_rank" in d and "num_key_value_heads" in d:  # MLA: one kv head per q head
        d["num_key_value_heads"] = d.get("num_attention_heads", 4)
    if "qk_head_dim" in d and "qk_nope_head_dim" in d and "qk_rope_head_dim" in d:
        d["qk_head_dim"] = d["qk_nope_head_dim"] + d["qk_rope_head_dim"]
    if d.get("head_dim", 0) is None and isinstance(d.get("num_attention_heads"), int):
        d["head_dim"] = (hs or 64) // d["num_attention_heads"]
    if isinstance(d.get("window_size"), int) and d["window_size"] > 2 and "depths" in d:
        d["window_size"] = 2  # swin-like: 64px / patch 4 -> 16x16 tokens -> 2x2 at the last stage
        d["image_size"] = 2 * IMG
    # per-layer lists (layer_types, mlp_only_layers, ...) must follow the new layer count
    for k, old in old_layers.items():
        new = d.get(k)
        if new == old:
            continue

        def is_index_list(v):
            return all(isinstance(x, int) and not isinstance(x, bool) for x in v) and \
                len(set(v)) == len(v) and list(v) == sorted(v) and len(v) > 2

        for lk, lv in d.items():  # out_indices need as many layers as indices
            if lk.endswith("out_indices") and isinstance(lv, (list, tuple)) and lv and max(lv) > new:
                new = d[k] = min(max(new, len(lv)), 4)
        per_layer = [lk for lk, lv in d.items() if isinstance(lv, (list, tuple)) and len(lv) == old
                     and old > new and not is_index_list(lv)]
        per_layer.sort(key=lambda lk: lk != "layer_types")
        keep: list[int] = []
        for lk in per_layer:  # first occurrence of each distinct value (capped at 4 layers)
            seen = {repr(d[lk][i]) for i in keep}
            for i, x in enumerate(d[lk]):
                if repr(x) not in seen and len(keep) < 4:
                    seen.add(repr(x))
                    keep.append(i)
        new = d[k] = max(new, len(keep))
        keep += [i for i in range(old) if i not in keep][: max(0, new - len(keep))]
        keep.sort()
        for lk in per_layer:
            d[lk] = [d[lk][i] for i in keep]
        for lk, lv in list(d.items()):
            if lk in per_layer or not isinstance(lv, (list, tuple)) or not lv:
                continue
            if not all(isinstance(x, int) and not isinstance(x, bool) for x in lv):
                continue
            if is_index_list(lv) and len(lv) == old:  # e.g. moe_layers = all layers
                d[lk] = list(range(new))
            elif lk.endswith(("_indexes", "_indices", "_idx", "_layers_idx", "out_indices")) and max(lv) >= new:
                top = new if "out_ind" in lk else new - 1
                d[lk] = sorted({min(x, top) for x in lv})
                if "out_ind" in lk and len(d[lk]) < min(len(lv), top):
                    d[lk] = list(range(top - min(len(lv), top) + 1, top + 1))


def _cfg_dicts(cfg) -> tuple[dict, dict]:
    """(constructor args, other attrs) of a config, recursing into sub-configs.  Derived
    attributes (e.g. Swin's num_layers) stay out of the constructor args so they are recomputed."""
    import dataclasses

    from transformers import PretrainedConfig

    full = cfg.to_dict()
    if dataclasses.is_dataclass(cfg):
        names = {f.name for f in dataclasses.fields(cfg) if f.init}
    else:
        names = set(full)
    init = {}
    for n in names:
        try:
            v = getattr(cfg, n)
        except Exception:  # e.g. heterogeneous per-layer attributes
            if n not in full:
                continue
            v = full[n]
        init[n] = v if isinstance(v, PretrainedConfig) or n not in full else full[n]
    extra = {k: v for k, v in full.items() if k not in names and isinstance(k, str)
             and not isinstance(getattr(cfg, k, None), PretrainedConfig)}
    for k in ("architectures", "transformers_version", "_name_or_path", "auto_map", "_out_features",
              "out_features", "dtype", "torch_dtype", "stage_names"):
        init.pop(k, None)
        extra.pop(k, None)
    for k, v in list(init.items()):
        if isinstance(v, PretrainedConfig):
            sub_init, sub_extra = _cfg_dicts(v)
            init[k] = dict(sub_init, model_type=v.model_type)
            extra[k] = sub_extra
    return init, extra


def _restore_extras(cfg, extra: dict) -> None:
    for k, v in extra.items():
        sub = getattr(cfg, k, None)
        if isinstance(v, dict) and sub is not None and hasattr(sub, "to_dict"):
            _restore_extras(sub, v)
        elif not hasattr(cfg, k):
            try:
                setattr(cfg, k, v)
            except Exception:
                pass


def _fix_rope(d: dict) -> None:
    """Rescale multimodal rope sections to the shrunk head_dim."""
    for rk in ("rope_parameters", "rope_scaling"):
        rp = d.get(rk)
        for r in (rp.values() if isinstance(rp, dict) and all(isinstance(x, dict) for x in rp.values()) and rp
                  else [rp]):
            if isinstance(r, dict) and isinstance(r.get("mrope_section"), (list, tuple)):
                hd = d.get("head_dim") or d.get("hidden_size", 64) // d.get("num_attention_heads", 4)
                prf = r.get("partial_rotary_factor", d.get("partial_rotary_factor", 1.0)) or 1.0
                total, sec = int(hd * prf) // 2, list(r["mrope_section"])
                new = [max(1, round(x * total / sum(sec))) for x in sec]
                new[-1] += total - sum(new)
                r["mrope_section"] = new


@functools.lru_cache(maxsize=None)
def _config_cached(model_type: str, task: str):
    from transformers import AutoConfig

    base = AutoConfig.for_model(model_type)
    d, extra = _cfg_dicts(base)
    specials: dict[int, int] = {}
    _shrink_dict(d, specials)
    _shrink_dict(extra, specials)
    _hc.apply_config_overrides(model_type, task, d)
    if "use_cache" in d:
        d["use_cache"] = False
    if task == "sequence-classification" and d.get("pad_token_id", 0) is None:
        d["pad_token_id"] = 0
    cfg = type(base)(**d)
    _restore_extras(cfg, extra)
    return cfg


def _for_class(cfg, cls):
    """The (sub-)config that cls expects (e.g. text_config for XForCausalLM of a VLM type)."""
    want = getattr(cls, "config_class", None)
    if want is None or isinstance(cfg, want):
        return cfg
    for k in getattr(cfg, "sub_configs", {}) or {}:
        sub = getattr(cfg, k, None)
        if isinstance(sub, want):
            return sub
    return cfg


def make_config(model_type: str, task: str):
    return copy.deepcopy(_for_class(_config_cached(model_type, task), _model_class(model_type, task)))


def _subcfg(cfg, *names):
    """First sub-config among names that exists, else cfg itself."""
    for n in names:
        sub = getattr(cfg, n, None)
        if sub is not None and not isinstance(sub, (int, float, str, dict, list)):
            return sub
    return cfg


_AUDIO_SUBS = ("audio_config", "encoder_config", "encoder", "speech_config", "audio_encoder_config")


def _get(cfg, *keys, default=None):
    for c in (cfg, _subcfg(cfg, "text_config", "decoder"), _subcfg(cfg, "vision_config", "encoder")):
        for k in keys:
            v = getattr(c, k, None)
            if v is not None:
                return v
    return default


# --------------------------------------------------------------------------- build
def _build(model_type: str, task: str):
    import torch

    cls = _model_class(model_type, task)
    cfg = make_config(model_type, task)
    torch.manual_seed(0)
    try:
        model = cls._from_config(cfg, attn_implementation="eager", experts_implementation="eager",
                                 dtype=torch.float32)
    except (ValueError, TypeError, ImportError):
        torch.manual_seed(0)
        model = cls._from_config(make_config(model_type, task), dtype=torch.float32)
    if any(p.dtype != torch.float32 for p in model.parameters() if p.is_floating_point()):
        model = model.float()
    model.train()
    return model


# --------------------------------------------------------------------------- inputs
def _special_ids(cfg) -> set[int]:
    out: set[int] = set()

    def walk(d):
        for k, v in d.items():
            if not isinstance(k, str):
                continue
            if isinstance(v, dict):
                walk(v)
            elif _TOKEN_KEY.search(k) and isinstance(v, int) and not isinstance(v, bool):
                out.add(v)
            elif _TOKEN_KEY.search(k) and isinstance(v, list):
                out.update(x for x in v if isinstance(x, int))
    walk(cfg.to_dict())
    return out


def _tokens(g, cfg, shape):
    import torch

    vocab = _get(cfg, "vocab_size", default=VOCAB)
    vocab = min(vocab if isinstance(vocab, int) else VOCAB, VOCAB)
    bad = _special_ids(cfg)
    allowed = torch.tensor([i for i in range(3, vocab) if i not in bad] or [vocab - 1])
    return allowed[torch.randint(0, len(allowed), shape, generator=g)]


def _image_hw(cfg):
    s = _get(cfg, "image_size", "img_size", default=IMG)
    if isinstance(s, (list, tuple)):
        return int(s[0]), int(s[-1])
    return int(s), int(s)


def _make_inputs(model_type: str, task: str, seed: int) -> dict:
    import torch

    g = torch.Generator().manual_seed(seed)
    cls = _model_class(model_type, task)
    cfg = _for_class(_config_cached(model_type, task), cls)
    params = inspect.signature(cls.forward).parameters
    main = getattr(cls, "main_input_name", "input_ids")
    spec = _hc.input_overrides(model_type, task)
    x: dict[str, Any] = {}
    S = spec.get("seq", SEQ)

    def rand(*shape):
        return torch.randn(*shape, generator=g)

    required = {n for n, p in params.items() if p.default is inspect.Parameter.empty
                and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and n != "self"}
    tok_key = "inputs" if main == "inputs" and task in _TEXT_TASKS else "input_ids"
    if main == tok_key or "input_ids" in required or "input_ids" in spec.get("also", ()):
        if task == "multiple-choice":
            x[tok_key] = _tokens(g, cfg, (B, 2, S))
        else:
            x[tok_key] = _tokens(g, cfg, (B, S))
        if "attention_mask" in params:
            x["attention_mask"] = torch.ones_like(x[tok_key])
    if main == "pixel_values" or "pixel_values" in required or "pixel_values" in spec.get("also", ()) or (
            "pixel_values" in params and model_type in _mappings()["zero-shot-image-classification"]):
        h, w = spec.get("hw", _image_hw(cfg))
        c = _get(cfg, "num_channels", "in_channels", "input_channels", default=3)
        if task == "video-classification" or spec.get("video"):
            t = spec.get("frames", _get(cfg, "num_frames", default=2))
            x["pixel_values"] = rand(B, t, c, h, w)
        else:
            x["pixel_values"] = rand(B, c, h, w)
    if main == "input_values":
        x["input_values"] = rand(B, spec.get("samples", 4000))
    if main == "input_features":
        acfg = next((c for c in (cfg, *(getattr(cfg, n, None) for n in _AUDIO_SUBS))
                     if c is not None and getattr(c, "num_mel_bins", None)), cfg)
        mel = getattr(acfg, "num_mel_bins", None) or (getattr(cfg, "input_feat_per_channel", 0) or 0) * \
            (getattr(cfg, "input_channels", 1) or 1) or _get(cfg, "feature_size", default=16)
        src = getattr(acfg, "max_source_positions", None)
        conformer = any(getattr(acfg, k, None) for k in ("subsampling_factor", "subsampling_conv_channels"))
        if getattr(acfg, "num_mel_bins", None) and not conformer and not spec.get("features_last"):
            x["input_features"] = rand(B, mel, spec.get("frames", 2 * (src or 16)))  # whisper-style
        else:
            x["input_features"] = rand(B, spec.get("frames", 32), mel)
    if main == "past_values":
        ctx = _get(cfg, "context_length", default=8)
        lags = max(getattr(cfg, "lags_sequence", None) or [0])
        chans = getattr(cfg, "num_input_channels", None)
        shape = (B, ctx + lags, chans) if chans else (B, ctx + lags)
        x["past_values"] = rand(*shape)
        if "past_observed_mask" in params:
            x["past_observed_mask"] = torch.ones(shape)
    if not x:  # unknown main input: generic float tensor
        x[main] = rand(B, S)
    # decoder inputs / labels by task
    if "decoder_input_ids" in params and task in ("seq2seq-lm", "speech-seq2seq", "base", "question-answering"):
        x["decoder_input_ids"] = _tokens(g, cfg, (B, S))
    nl = getattr(cfg, "num_labels", 2)
    if "labels" not in params and spec.get("labels", True) and task in _LM_TASKS and any(
            p.kind is p.VAR_KEYWORD for p in params.values()):
        params = dict(params, labels=None)  # labels accepted through **kwargs
    if task in _LM_TASKS and task not in ("seq2seq-lm", "speech-seq2seq") and "labels" in params and tok_key in x:
        x["labels"] = x[tok_key].clone()
    elif task in ("seq2seq-lm", "speech-seq2seq") and "labels" in params:
        x["labels"] = x.get("decoder_input_ids", _tokens(g, cfg, (B, S))).clone()
    elif task in ("sequence-classification", "image-classification", "audio-classification",
                  "multiple-choice", "video-classification", "time-series-classification",
                  "audio-xvector") and "labels" in params:
        x["labels"] = torch.randint(0, 2 if task == "multiple-choice" else nl, (B,), generator=g)
    elif task == "token-classification" and "labels" in params:
        x["labels"] = torch.randint(0, nl, (B, S), generator=g)
    elif task == "question-answering" and "start_positions" in params:
        x["start_positions"] = torch.randint(0, S, (B,), generator=g)
        x["end_positions"] = torch.randint(0, S, (B,), generator=g)
    elif task in ("ctc", "rnnt", "tdt") and "labels" in params:
        x["labels"] = _tokens(g, cfg, (B, 4))
    elif task == "semantic-segmentation" and "labels" in params and "pixel_values" in x:
        h, w = x["pixel_values"].shape[-2:]
        x["labels"] = torch.randint(0, nl, (B, h, w), generator=g)
    if spec.get("image_tokens") and "input_ids" in x:  # VLM: placeholder tokens for the image features
        tid = next(getattr(cfg, k) for k in ("image_token_id", "image_token_index") if getattr(cfg, k, None) is not None)
        x["input_ids"][:, 1:1 + spec["image_tokens"]] = tid
        if "labels" in x:
            x["labels"] = x["input_ids"].clone()
    if task in ("ctc", "rnnt", "tdt") and "attention_mask" in params and "attention_mask" not in x:
        main_x = x.get("input_values", x.get("input_features"))
        if main_x is not None and (main_x.dim() == 2 or main == "input_features"):
            x["attention_mask"] = torch.ones(main_x.shape[:2], dtype=torch.long)
    if task == "masked-image-modeling" and "bool_masked_pos" in params and "pixel_values" in x:
        p = _get(cfg, "patch_size", default=16)
        h, w = x["pixel_values"].shape[-2:]
        x["bool_masked_pos"] = torch.rand(B, (h // p) * (w // p), generator=g) < 0.5
    if "noise" in params and "pixel_values" in x:  # e.g. ViTMAE random masking, made deterministic
        p = _get(cfg, "patch_size", default=16)
        h, w = x["pixel_values"].shape[-2:]
        x["noise"] = torch.rand(B, (h // p) * (w // p), generator=g)
    if "mm_token_type_ids" in params and "input_ids" in x:
        x["mm_token_type_ids"] = torch.zeros_like(x["input_ids"])
    if "return_loss" in params and task in ("zero-shot-image-classification", "base", "pretraining"):
        x["return_loss"] = True
    for k, v in spec.get("extra", {}).items():
        x[k] = v(g, cfg, x) if callable(v) else v
    for k in spec.get("drop", ()):
        x.pop(k, None)
    return x


def _kind_from_inputs(x: dict) -> str:
    tok = any(k in x and not x[k].is_floating_point() for k in ("input_ids", "inputs"))
    px = x.get("pixel_values")
    if px is not None:
        return "tokens+image" if tok else ("video" if px.dim() == 5 else "image")
    if "input_values" in x or "input_features" in x:
        return "audio"
    if "past_values" in x:
        return "features"
    return "tokens" if tok else "other"


def _input_kind(model_type: str, task: str) -> str:
    name = f"hf/{model_type}/{task}"
    if name in _hc.KINDS:
        return _hc.KINDS[name]
    return _kind_from_inputs(_make_inputs(model_type, task, 0))


# --------------------------------------------------------------------------- loss
def _float_leaves(obj, out, depth=0):
    import torch

    if depth > 4:
        return
    if isinstance(obj, torch.Tensor):
        if obj.is_floating_point() and obj.numel() and (obj.requires_grad or not torch.is_grad_enabled()):
            out.append(obj)
    elif isinstance(obj, dict):  # ModelOutput is a dict
        for v in obj.values():
            _float_leaves(v, out, depth + 1)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            _float_leaves(v, out, depth + 1)


def default_loss(model, inputs: dict):
    """``output.loss`` if the model computed one, else sum of means of float outputs."""
    out = model(**inputs)
    loss = out.get("loss") if isinstance(out, dict) else None
    import torch

    if isinstance(loss, torch.Tensor) and (loss.requires_grad or not torch.is_grad_enabled()):
        return loss.float().sum() if loss.dim() else loss.float()
    leaves: list = []
    _float_leaves(out, leaves)
    if not leaves:
        raise RuntimeError("model output has no differentiable floating tensors")
    return sum(t.float().mean() for t in leaves)


# --------------------------------------------------------------------------- registry
def _entry(model_type: str, task: str) -> ZooModel:
    return ZooModel(
        name=f"hf/{model_type}/{task}", family="hf",
        input_kind=_input_kind(model_type, task),
        build=functools.partial(_build, model_type, task),
        make_inputs=functools.partial(_make_inputs, model_type, task),
        loss=default_loss,
    )


def _split(name: str) -> tuple[str, str]:
    _, t, task = name.split("/", 2)
    return t, task


def models() -> list[ZooModel]:
    """Entries that passed the CPU check (baked data; does not import transformers)."""
    return [_entry(*_split(n)) for n in sorted(n for n, r in _hc.RESULTS.items() if r is None)]


def unbuildable() -> list[tuple[str, str]]:
    """(model_type, reason) for mapped types without a passing entry, plus failed extra entries."""
    res = _hc.RESULTS
    passed = {_split(n)[0] for n, r in res.items() if r is None}
    out = []
    for t in model_types():
        if t not in passed:
            tried = [n for n in (f"hf/{t}/{k}" for k in candidate_tasks(t)) if n in res]
            out.append((t, res[tried[0]] if tried else "not checked with this transformers version"))
    for t, task in EXTRA_ENTRIES:
        n = f"hf/{t}/{task}"
        if res.get(n, "") is not None:
            out.append((n, res.get(n) or "not checked with this transformers version"))
    return sorted(out)


# --------------------------------------------------------------------------- CPU check
def check_one(name: str, time_limit: float = 3.0) -> dict:
    """Build, run loss+backward on CPU, check determinism; returns a result dict."""
    import time

    import torch

    t, task = _split(name)
    r: dict[str, Any] = {"name": name}
    cls = _model_class(t, task)
    try:
        make_config(t, task)
    except Exception as e:
        e.stage = "config"
        raise
    with torch.device("meta"):
        n_meta = sum(p.numel() for p in cls._from_config(make_config(t, task)).parameters())
    if n_meta > 20_000_000:
        raise RuntimeError(f"too large after shrinking ({n_meta / 1e6:.1f}M params)")
    t0 = time.process_time()
    m = _build(t, task)
    r["build_s"] = time.process_time() - t0
    sd1 = {k: v.clone() for k, v in m.state_dict().items()}
    r["params"] = sum(p.numel() for p in m.parameters())
    x = _make_inputs(t, task, 0)
    x2 = _make_inputs(t, task, 0)
    assert all(not isinstance(v, torch.Tensor) or torch.equal(v, x2[k]) for k, v in x.items()), "inputs nondet"
    assert all(isinstance(v, (torch.Tensor, int, float, bool)) for v in x.values()), "non-flat inputs"
    loss = default_loss(m, x)  # cold run (lazy imports, caches)
    if not (loss.dim() == 0 and torch.isfinite(loss)):
        raise RuntimeError(f"loss not a finite scalar: shape {tuple(loss.shape)} value {loss}")
    loss.backward()
    grads = [p.grad for p in m.parameters() if p.requires_grad]
    r["no_grad_params"] = sum(gr is None for gr in grads)
    if not any(gr is not None and gr.abs().sum() > 0 for gr in grads):
        raise RuntimeError("no nonzero gradient")
    m.zero_grad(set_to_none=True)
    t0 = time.process_time()
    again = default_loss(m, x)  # warm run: timed, and must reproduce the loss exactly
    again.backward()
    r["fwd_bwd_s"] = time.process_time() - t0
    if r["fwd_bwd_s"] > time_limit:
        raise RuntimeError(f"too slow: forward+backward {r['fwd_bwd_s']:.1f}s CPU")
    if not torch.equal(again.detach(), loss.detach()):
        raise RuntimeError(f"nondeterministic in train mode ({loss.item()} vs {again.item()})")
    sd2 = _build(t, task).state_dict()
    if any(not torch.equal(v, sd2[k]) for k, v in sd1.items() if v.is_floating_point()):
        raise RuntimeError("build() not deterministic")
    r["loss"] = float(loss.detach())
    r["kind"] = _kind_from_inputs(x)
    return r


def _worker(names: list[str], out_path: str, sweep: bool) -> None:
    """Check names (entry names, or model types when sweeping); append JSON lines."""
    import json
    import signal
    import warnings

    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    try:
        from transformers.utils import logging as hf_logging
        hf_logging.set_verbosity_error()
    except Exception:
        pass

    def on_alarm(*_):
        raise TimeoutError("timed out (>60 s build+run)")

    signal.signal(signal.SIGALRM, on_alarm)
    for item in names:
        todo = [f"hf/{item}/{tk}" for tk in candidate_tasks(item)] if sweep and "/" not in item else [item]
        for n in todo:
            signal.alarm(60)
            try:
                r = check_one(n)
                r["error"] = None
            except BaseException as e:  # noqa: BLE001 - record everything
                if isinstance(e, KeyboardInterrupt):
                    raise
                msg = " ".join(str(e).split())[:240]
                r = {"name": n, "error": f"{type(e).__name__}: {msg}", "stage": getattr(e, "stage", "run")}
            finally:
                signal.alarm(0)
            with open(out_path, "a") as f:
                f.write(json.dumps(r) + "\n")
            if r["error"] is None or r.get("stage") == "config":
                break


def _main(argv=None) -> int:
    import argparse
    import json
    import os
    import subprocess
    import sys
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=None, help="regex on entry name (or model type with --check)")
    ap.add_argument("--check", action="store_true", help="sweep all candidate tasks of every model type")
    ap.add_argument("--out", default=None, help="JSON lines result file")
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--chunk", type=int, default=20)
    ap.add_argument("--worker", nargs="*", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker is not None:
        _worker(a.worker, a.out, a.check)
        return 0
    items = model_types() + [f"hf/{t}/{k}" for t, k in EXTRA_ENTRIES] if a.check else [m.name for m in models()]
    if a.only:
        items = [i for i in items if re.search(a.only, i)]
    out = a.out or tempfile.mktemp(suffix=".jsonl")
    done = set()
    if os.path.exists(out):
        for line in open(out):
            n = json.loads(line)["name"]
            done.update((n, _split(n)[0]) if a.check else (n,))
    todo = [i for i in items if i not in done]
    me = os.path.abspath(__file__)
    procs: list = []
    while todo or procs:
        while todo and len(procs) < a.jobs:
            chunk, todo = todo[:a.chunk], todo[a.chunk:]
            cmd = [sys.executable, me, "--out", out, "--worker", *chunk] + (["--check"] if a.check else [])
            procs.append((subprocess.Popen(cmd, stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL), chunk))
        p, chunk = procs.pop(0)
        p.wait()
        if p.returncode != 0:  # crashed: record the culprit, requeue the rest
            seen = {json.loads(line)["name"] for line in open(out)} if os.path.exists(out) else set()
            rest = [c for c in chunk if not any(s == c or s.startswith(f"hf/{c}/") for s in seen)]
            if rest:
                with open(out, "a") as f:
                    n = f"hf/{rest[0]}/{candidate_tasks(rest[0])[0]}" if "/" not in rest[0] else rest[0]
                    f.write(json.dumps({"name": n, "error": f"worker crashed (rc={p.returncode})"}) + "\n")
                todo = rest[1:] + todo
    rows = {}
    for line in open(out):
        r = json.loads(line)
        rows[r["name"]] = r
    tot = 0.0
    for n in sorted(rows):
        r = rows[n]
        if r["error"] is None:
            tot += r["fwd_bwd_s"]
            print(f"PASS {n:60s} {r['params']:>9d} params  fwd+bwd {r['fwd_bwd_s']:.3f}s")
        else:
            print(f"FAIL {n:60s} {r['error']}")
    npass = sum(r["error"] is None for r in rows.values())
    print(f"total: {npass} pass, {len(rows) - npass} fail, fwd+bwd CPU {tot:.1f}s, results in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
