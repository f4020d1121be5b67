"""The zoo registry: every model of tests/zoo, by name (see tests/zoo/README.md).

    from registry import all_models, unbuildable
    zm = all_models()["tv/resnet18"]
    model = zm.build(); inputs = zm.make_inputs(0); loss = zm.loss(model, inputs)

Families: Hugging Face transformers from tiny configs (hf_models.py), torchvision and timm with
random weights (vision_models.py), in-repo families where those leave gaps (repo_models.py).
Nothing is downloaded. Importing is cheap: entries build their model only when asked.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import repo_models  # noqa: E402
import vision_models  # noqa: E402

FAMILIES = [vision_models, repo_models]
# The Hugging Face family joins when its registry is in the tree (issue 7 adds it next).
if os.path.exists(os.path.join(os.path.dirname(os.path.abspath(__file__)), "hf_models.py")):
    import hf_models  # noqa: E402
    FAMILIES.insert(0, hf_models)


def all_models() -> dict:
    out = {}
    for fam in FAMILIES:
        for zm in fam.models():
            if zm.name in out:
                raise ValueError(f"duplicate zoo model name {zm.name}")
            out[zm.name] = zm
    return dict(sorted(out.items()))


def unbuildable() -> list:
    """(name, reason) of every model a family lists but cannot build or train tiny."""
    return sorted(x for fam in FAMILIES for x in fam.unbuildable())
