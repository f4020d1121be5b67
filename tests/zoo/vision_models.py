"""torchvision and timm models with random weights for torch-trn's tiered model tests.

Nothing is downloaded: every builder passes ``weights=None`` (and
``weights_backbone=None``) / ``pretrained=False``.  Every entry is trained in
train mode on the smallest input that model accepts (batch 2 unless noted);
dropout / stochastic depth are disabled (constructor kwargs where they exist,
plus ``zoo_model.disable_stochastic`` on the built module).

torchvision (``tv/<name>``)
  * every classification model of ``torchvision.models.list_models()``;
    sizes in ``TV_CLS_SIZE`` (64x64; 32x32 for the ViT / Swin transformers,
    which have no BatchNorm; more where the model needs it).  inception_v3
    is built with ``aux_logits=False`` (its aux head needs ~299x299 input);
    googlenet keeps its aux heads (loss sums the three cross entropies).
  * segmentation (fcn / deeplabv3 with their aux head, lraspp): per-pixel CE.
  * detection (Faster/Mask/Keypoint R-CNN, RetinaNet, FCOS, SSD, SSDlite) in
    training mode, loss = sum of the loss dict.  Inputs are 64x64 images with
    two boxes each (SSD / SSDlite resize them to 300 / 320 internally), flattened into tensors (``images``, ``boxes``, ``labels``,
    ``masks``, ``keypoints``).  The R-CNN box/anchor samplers use
    ``torch.randperm``; the batch sizes per image are set larger than the number
    of anchors / proposals so every candidate is taken and the sampling is
    deterministic.  Proposal selection is still data dependent (top-k / NMS of
    random-weight scores), so device-vs-CPU drift can change which boxes are
    kept: compare these with a looser tolerance.
  * video: r3d / mc3 / r2plus1d / swin3d on a [2,3,4,32,32] clip; s3d (fixed
    2x7x7 average pool) and mvit (builders hard-code 16x224x224 positional
    embeddings) need a [1,3,16,224,224] clip.
  * optical flow: raft_small / raft_large on 128x128 frames, 3 flow updates,
    loss = mean L1 of every flow prediction against a random target.
  * quantization models are out of scope (``unbuildable()``).
  All 109 entries passed ``--check``.  ``tier2_ok`` is False for the 65 in
  ``TV_SLOW``: > 25M params or a > 2 s single-core CPU step.

timm (``timm/<name>``)
  Every name of ``timm.list_models()`` is an entry, built with
  ``timm.create_model(name, pretrained=False, num_classes=10, drop_rate=0.,
  drop_path_rate=0.)``.  Input policy (``_timm_policy``): models whose
  pretrained cfg says ``fixed_input_size`` (ViT-like) get ``img_size=64`` and a
  64x64 input, others a 64x64 input; ``TIMM_POLICY`` (vision_timm_data.py)
  overrides that per model / per family where a probe found the default fails.
  ``TIMM_FAILURES`` lists models known not to train on CPU this way and
  ``TIMM_HUGE`` those over 1e9 parameters (too big for host memory with AdamW);
  both are excluded from ``models()`` and reported by ``unbuildable()``.  Only a sample
  of timm was checked for real when this file was written (see
  vision_timm_data.py: 358 of them, all passing); the full timm check is done
  by the tier-3 run, which records failures in tests/zoo/expected_failures.txt
  -- nothing is built or checked at import.  ``tier2_ok`` is True only for
  timm models that were checked for real and are small (<= 5M params) and fast
  (<= 1 s single-core CPU step).

Command line (CPU check; keep runs short on shared machines)::

    python3 tests/zoo/vision_models.py --check [--only REGEX] [--limit N]
        [--sample] [--timeout S] [--max-params N] [--resume]
        [--json tests/zoo/vision_check.json]
    python3 tests/zoo/vision_models.py --meta [--only REGEX]   # timm shape probe

``--check`` prints status, parameter count and step time (single-core CPU
time of forward + backward + SGD step) per model and writes every result and
the failures to the JSON file (see vision_check.py); ``--sample`` restricts timm to one model per
family (name prefix before the first '_' or digit; the smallest by parameter
count).  ``--meta`` builds timm models on the meta device and runs the forward
with the input policy (cheap: no compute), probing alternative policies for
failures; it is how ``TIMM_POLICY`` was produced.
"""
from __future__ import annotations

import functools
import os
import re
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from zoo_model import ZooModel, disable_stochastic  # noqa: E402
from vision_timm_data import TIMM_FAILURES, TIMM_HUGE, TIMM_POLICY, TIMM_TIER2  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NUM_CLASSES = 10
DET_CLASSES = 5
SEG_CLASSES = 5
B = 2

# ----------------------------------------------------------------------------
# shared helpers
# ----------------------------------------------------------------------------


def _gen(seed):
    return torch.Generator().manual_seed(int(seed))


def _finish(ctor):
    """Seed, construct, make deterministic, float32, train mode."""
    torch.manual_seed(0)
    model = ctor()
    disable_stochastic(model)
    return model.float().train()


def _image_inputs(shape, num_classes=NUM_CLASSES):
    def make(seed):
        g = _gen(seed)
        return {"x": torch.randn(*shape, generator=g),
                "y": torch.randint(0, num_classes, (shape[0],), generator=g)}
    return make


def _tensors(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict):
        return [t for v in out.values() for t in _tensors(v)]
    if isinstance(out, (tuple, list)):
        return [t for v in out for t in _tensors(v)]
    for attr in ("logits", "last_hidden_state"):
        if isinstance(getattr(out, attr, None), torch.Tensor):
            return [getattr(out, attr)]
    return []


def logits_loss(out, y):
    """CE for every [B, NUM_CLASSES] floating output (aux heads too), else mean square
    (encoder-only timm variants that ignore num_classes and return features)."""
    total = None
    for t in _tensors(out):
        if not t.is_floating_point():
            continue
        if t.dim() == 2 and tuple(t.shape) == (y.shape[0], NUM_CLASSES):
            term = F.cross_entropy(t, y)
        else:
            term = t.float().pow(2).mean()
        total = term if total is None else total + term
    if total is None:
        raise TypeError(f"model output {type(out).__name__} has no floating tensor")
    return total


def _cls_loss(model, inputs):
    return logits_loss(model(inputs["x"]), inputs["y"])


# ----------------------------------------------------------------------------
# torchvision
# ----------------------------------------------------------------------------

# Square input per classification model: 64 px by default. At 32 px a stride-32 net ends on 1x1
# maps, so its last BatchNorm normalises 2 values per channel (batch 2) and amplifies float32
# rounding into the logits: densenet121's CPU float32 logits are 35 % from float64's at 32 px and
# 6e-6 at 64 px, which made device-vs-CPU comparisons noise. Nets without BatchNorm keep the
# smallest size they accept (cheaper): TV_SMALL_NO_BN.
TV_CLS_DEFAULT_SIZE = 64
TV_SMALL_NO_BN = ("vit_", "swin_")  # LayerNorm transformers: well conditioned at 32 px
TV_CLS_SIZE = {  # exceptions to the default
    "inception_v3": 75,     # aux_logits=False; the aux head needs ~299 px
    "maxvit_t": 224,        # partition size 7 at stride 32: 224 is the smallest
    "vit_h_14": 28,         # image_size must be a multiple of the patch (14)
}
TV_SEGMENTATION = ["deeplabv3_mobilenet_v3_large", "deeplabv3_resnet101", "deeplabv3_resnet50",
                   "fcn_resnet101", "fcn_resnet50", "lraspp_mobilenet_v3_large"]
TV_DETECTION = ["fasterrcnn_mobilenet_v3_large_320_fpn", "fasterrcnn_mobilenet_v3_large_fpn",
                "fasterrcnn_resnet50_fpn", "fasterrcnn_resnet50_fpn_v2", "fcos_resnet50_fpn",
                "keypointrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn", "maskrcnn_resnet50_fpn_v2",
                "retinanet_resnet50_fpn", "retinanet_resnet50_fpn_v2", "ssd300_vgg16",
                "ssdlite320_mobilenet_v3_large"]
TV_VIDEO = {  # name -> clip shape [B, C, T, H, W]
    "mc3_18": (2, 3, 4, 32, 32), "r2plus1d_18": (2, 3, 4, 32, 32), "r3d_18": (2, 3, 4, 32, 32),
    # the mvit builders hard-code spatial_size=(224, 224), temporal_size=16 (positional embeddings)
    "mvit_v1_b": (1, 3, 16, 224, 224), "mvit_v2_s": (1, 3, 16, 224, 224),
    "s3d": (1, 3, 16, 224, 224),  # fixed AvgPool3d((2, 7, 7)) after a /8 x /32 stride
    "swin3d_t": (2, 3, 4, 32, 32), "swin3d_s": (2, 3, 4, 32, 32), "swin3d_b": (2, 3, 4, 32, 32),
}
TV_FLOW = {"raft_small": 128, "raft_large": 128}  # the 4-level correlation pyramid needs >= 16x16 at 1/8
TV_QUANTIZED_REASON = "quantized int8 model (torchvision.models.quantization): out of scope for float training parity"
# From the --check run (single-core CPU): > 25M params or a step > 2 s -> tier2_ok=False.
TV_SLOW = {
    'alexnet', 'convnext_base', 'convnext_large', 'convnext_small', 'convnext_tiny', 'deeplabv3_resnet101',
    'deeplabv3_resnet50', 'densenet161', 'efficientnet_b5', 'efficientnet_b6', 'efficientnet_b7',
    'efficientnet_v2_l', 'efficientnet_v2_m', 'fasterrcnn_resnet50_fpn', 'fasterrcnn_resnet50_fpn_v2',
    'fcn_resnet101', 'fcn_resnet50', 'fcos_resnet50_fpn', 'keypointrcnn_resnet50_fpn', 'maskrcnn_resnet50_fpn',
    'maskrcnn_resnet50_fpn_v2', 'maxvit_t', 'mvit_v1_b', 'mvit_v2_s', 'r2plus1d_18', 'r3d_18', 'regnet_x_16gf',
    'regnet_x_32gf', 'regnet_x_8gf', 'regnet_y_128gf', 'regnet_y_16gf', 'regnet_y_32gf', 'regnet_y_8gf',
    'resnet101', 'resnet152', 'resnext101_32x8d', 'resnext101_64x4d', 'retinanet_resnet50_fpn',
    'retinanet_resnet50_fpn_v2', 's3d', 'ssd300_vgg16', 'swin3d_b', 'swin3d_s', 'swin3d_t', 'swin_b', 'swin_s',
    'swin_t', 'swin_v2_b', 'swin_v2_s', 'swin_v2_t', 'vgg11', 'vgg11_bn', 'vgg13', 'vgg13_bn', 'vgg16',
    'vgg16_bn', 'vgg19', 'vgg19_bn', 'vit_b_16', 'vit_b_32', 'vit_h_14', 'vit_l_16', 'vit_l_32',
    'wide_resnet101_2', 'wide_resnet50_2'
}


def _tv_cls_entry(name):
    size = TV_CLS_SIZE.get(name, 32 if name.startswith(TV_SMALL_NO_BN) else TV_CLS_DEFAULT_SIZE)

    def build():
        import torchvision
        kw = dict(weights=None, num_classes=NUM_CLASSES)
        if name.startswith("vit_"):
            kw["image_size"] = size
        if name == "maxvit_t":
            kw["input_size"] = (size, size)
        if name in ("inception_v3", "googlenet"):
            kw.update(aux_logits=name == "googlenet", init_weights=True)
        if name.startswith(("alexnet", "vgg", "squeezenet", "mnasnet", "mobilenet", "efficientnet",
                            "vit_", "googlenet", "inception_v3")):
            kw["dropout"] = 0.0
        return _finish(lambda: torchvision.models.get_model(name, **kw))

    return ZooModel(f"tv/{name}", "torchvision", "image", build, _image_inputs((B, 3, size, size)), _cls_loss)


def _tv_seg_entry(name):
    aux = not name.startswith("lraspp")

    def build():
        import torchvision
        kw = dict(weights=None, weights_backbone=None, num_classes=SEG_CLASSES)
        if aux:
            kw["aux_loss"] = True
        return _finish(lambda: torchvision.models.get_model(name, **kw))

    def make(seed):
        g = _gen(seed)
        return {"x": torch.randn(B, 3, 32, 32, generator=g),
                "y": torch.randint(0, SEG_CLASSES, (B, 32, 32), generator=g)}

    def loss(model, inputs):
        out = model(inputs["x"])
        total = F.cross_entropy(out["out"], inputs["y"])
        if "aux" in out:
            total = total + 0.5 * F.cross_entropy(out["aux"], inputs["y"])
        return total

    return ZooModel(f"tv/{name}", "torchvision", "image", build, make, loss)


def _tv_det_entry(name):
    size, nbox, nkp = 64, 2, 4

    def build():
        import torchvision
        kw = dict(weights=None, weights_backbone=None, num_classes=DET_CLASSES)
        if "rcnn" in name or name.startswith(("retinanet", "fcos")):
            kw.update(min_size=size, max_size=size)
        if "rcnn" in name:
            # take every anchor / proposal: the samplers' randperm then has no effect
            kw.update(rpn_pre_nms_top_n_train=64, rpn_post_nms_top_n_train=16,
                      rpn_batch_size_per_image=100000, box_batch_size_per_image=100000)
        if name.startswith("keypointrcnn"):
            kw["num_keypoints"] = nkp
        return _finish(lambda: torchvision.models.get_model(name, **kw))

    def make(seed):
        g = _gen(seed)
        xy = torch.randint(0, size - 28, (B, nbox, 2), generator=g).float()
        wh = torch.randint(8, 25, (B, nbox, 2), generator=g).float()
        boxes = torch.cat([xy, xy + wh], dim=-1)
        inp = {"images": torch.rand(B, 3, size, size, generator=g), "boxes": boxes,
               "labels": torch.randint(1, DET_CLASSES, (B, nbox), generator=g)}
        if name.startswith("maskrcnn"):
            masks = torch.zeros(B, nbox, size, size, dtype=torch.uint8)
            for b in range(B):
                for i in range(nbox):
                    x0, y0, x1, y1 = (int(v) for v in boxes[b, i])
                    masks[b, i, y0:y1, x0:x1] = 1
            inp["masks"] = masks
        if name.startswith("keypointrcnn"):
            t = torch.rand(B, nbox, nkp, 2, generator=g)
            kp = boxes[:, :, None, :2] + t * (boxes[:, :, None, 2:] - boxes[:, :, None, :2])
            inp["keypoints"] = torch.cat([kp, torch.ones(B, nbox, nkp, 1)], dim=-1)
        return inp

    def loss(model, inputs):
        targets = []
        for b in range(inputs["images"].shape[0]):
            t = {"boxes": inputs["boxes"][b], "labels": inputs["labels"][b]}
            if "masks" in inputs:
                t["masks"] = inputs["masks"][b]
            if "keypoints" in inputs:
                # torchvision takes float32 keypoints only, also in a float64 model (the zoo's
                # float64 reference run); a no-op on float32
                t["keypoints"] = inputs["keypoints"][b].float()
            targets.append(t)
        losses = model(list(inputs["images"]), targets)
        return sum(losses.values())

    return ZooModel(f"tv/{name}", "torchvision", "image", build, make, loss)


def _tv_video_entry(name):
    shape = TV_VIDEO[name]

    def build():
        import torchvision
        kw = dict(weights=None, num_classes=NUM_CLASSES)
        if name.startswith(("s3d", "mvit", "swin3d")):
            kw["dropout"] = 0.0
        return _finish(lambda: torchvision.models.get_model(name, **kw))

    return ZooModel(f"tv/{name}", "torchvision", "video", build, _image_inputs(shape), _cls_loss)


def _tv_flow_entry(name):
    size = TV_FLOW[name]

    def build():
        import torchvision
        return _finish(lambda: torchvision.models.get_model(name, weights=None))

    def make(seed):
        g = _gen(seed)
        return {"image1": torch.rand(1, 3, size, size, generator=g) * 2 - 1,
                "image2": torch.rand(1, 3, size, size, generator=g) * 2 - 1,
                "flow": torch.randn(1, 2, size, size, generator=g)}

    def loss(model, inputs):
        preds = model(inputs["image1"], inputs["image2"], num_flow_updates=3)
        return sum((p - inputs["flow"]).abs().mean() for p in preds) / len(preds)

    return ZooModel(f"tv/{name}", "torchvision", "image", build, make, loss)


@functools.lru_cache(maxsize=None)
def _tv_names():
    import torchvision.models as M
    cls = M.list_models(module=M)
    quant = M.list_models(module=M.quantization)
    return cls, quant


def torchvision_models():
    cls, _ = _tv_names()
    out = [_tv_cls_entry(n) for n in cls]
    out += [_tv_seg_entry(n) for n in TV_SEGMENTATION]
    out += [_tv_det_entry(n) for n in TV_DETECTION]
    out += [_tv_video_entry(n) for n in TV_VIDEO]
    out += [_tv_flow_entry(n) for n in TV_FLOW]
    for zm in out:
        zm.tier2_ok = zm.name[3:] not in TV_SLOW
    return out


# ----------------------------------------------------------------------------
# timm
# ----------------------------------------------------------------------------


def timm_family(name):
    return re.match(r"[A-Za-z]+", name).group(0)


def _timm_policy(name):
    """-> (img_size kwarg or None, input (C, H, W))."""
    import timm
    cfg = timm.models.get_pretrained_cfg(name)
    chans = cfg.input_size[0] if cfg is not None and cfg.input_size else 3
    pol = TIMM_POLICY.get(name, TIMM_POLICY.get(timm_family(name) + "*"))
    if pol is None:
        fixed = bool(cfg is not None and getattr(cfg, "fixed_input_size", False))
        pol = (64 if fixed else None, 64)
    img, size = pol
    if size == "default":
        size = cfg.input_size[1]
    return img, (chans, size, size)


def timm_build(name, img_size=None):
    import timm
    kw = dict(pretrained=False, num_classes=NUM_CLASSES, drop_rate=0.0, drop_path_rate=0.0)
    if img_size is not None:
        kw["img_size"] = img_size
    while True:
        torch.manual_seed(0)
        try:
            return timm.create_model(name, **kw)
        except TypeError as e:  # some constructors lack drop_rate / drop_path_rate
            bad = [k for k in ("drop_path_rate", "drop_rate") if k in kw and re.search(
                rf"unexpected keyword argument(\(s\))?:? .*'{k}'", str(e))]
            if not bad:
                raise
            kw.pop(bad[0])


def _timm_entry(name):
    def build():
        img, _ = _timm_policy(name)
        return _finish(lambda: timm_build(name, img))

    def make(seed):
        _, chw = _timm_policy(name)
        return _image_inputs((B,) + chw)(seed)

    return ZooModel(f"timm/{name}", "timm", "image", build, make, _cls_loss, tier2_ok=name in TIMM_TIER2)


@functools.lru_cache(maxsize=None)
def _timm_names():
    import timm
    return tuple(timm.list_models())


def timm_models():
    return [_timm_entry(n) for n in _timm_names() if n not in TIMM_FAILURES and n not in TIMM_HUGE]


# ----------------------------------------------------------------------------
# public API
# ----------------------------------------------------------------------------


def models() -> list:
    return sorted(torchvision_models() + timm_models(), key=lambda zm: zm.name)


def unbuildable() -> list:
    _, quant = _tv_names()
    out = [(f"tv/{n}", TV_QUANTIZED_REASON) for n in quant]
    names = set(_timm_names())
    out += [(f"timm/{n}", why) for n, why in TIMM_FAILURES.items() if n in names]
    out += [(f"timm/{n}", f"{p / 1e9:.1f}B params: fp32 weights+grads+AdamW state (CPU reference and device copy) "
                          "exceed host memory") for n, p in TIMM_HUGE.items() if n in names]
    return sorted(out)


if __name__ == "__main__":
    from vision_check import main
    sys.exit(main())
