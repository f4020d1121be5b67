"""A tiny BERT classifier fine-tuned by transformers.Trainer, for test_ecosystem.py.

No network: the model is built from a BertConfig with seeded random weights, the data is made
here. The Trainer gets no device argument: with torch_trn imported it picks `neuron:0` by itself;
`use_cpu=True` gives the CPU reference (same seed, same data, same order).

    python3 hf_train.py [--cpu] [--bf16]   # prints one JSON line: losses, parameter devices
"""
import json
import sys
import tempfile

import torch

STEPS = 6
BATCH = 4
SEQ = 12
VOCAB = 100
N_LABELS = 3


class _Data(torch.utils.data.Dataset):
    def __init__(self, n):
        g = torch.Generator().manual_seed(1234)
        self.ids = torch.randint(1, VOCAB, (n, SEQ), generator=g)
        lengths = torch.randint(SEQ // 2, SEQ + 1, (n,), generator=g)
        self.mask = (torch.arange(SEQ)[None, :] < lengths[:, None]).long()
        self.ids = self.ids * self.mask            # pad token 0 after each sequence's length
        self.labels = torch.randint(0, N_LABELS, (n,), generator=g)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        return {"input_ids": self.ids[i], "attention_mask": self.mask[i], "labels": self.labels[i]}


def make_model():
    from transformers import BertConfig, BertForSequenceClassification
    config = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=SEQ, num_labels=N_LABELS,
                        # Dropout draws from the device's generator, which differs from the CPU's
                        # (as CUDA's does): without dropout both runs compute the same function.
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    torch.manual_seed(0)
    return BertForSequenceClassification(config)


def train(use_cpu=False, bf16=False, steps=STEPS, torch_compile=False):
    """Fine-tunes for `steps` steps; returns {"device", "losses", "param_devices", "args_device"}."""
    from transformers import Trainer, TrainerCallback, TrainingArguments

    losses = []

    class _Losses(TrainerCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            if logs and "loss" in logs:
                losses.append(float(logs["loss"]))

    model = make_model()
    with tempfile.TemporaryDirectory() as out:
        args = TrainingArguments(output_dir=out, use_cpu=use_cpu, bf16=bf16, max_steps=steps,
                                 per_device_train_batch_size=BATCH, learning_rate=1e-3, logging_steps=1,
                                 save_strategy="no", report_to=[], seed=7, disable_tqdm=True,
                                 dataloader_num_workers=0, torch_compile=torch_compile)
        trainer = Trainer(model=model, args=args, train_dataset=_Data(BATCH * steps),
                          callbacks=[_Losses()])
        trainer.train()
    return {"args_device": str(args.device), "losses": losses, "compile_backend": args.torch_compile_backend,
            "param_devices": sorted({str(p.device) for p in trainer.model.parameters()})}


if __name__ == "__main__":
    import torch_trn  # noqa: F401  (the only change a user makes)
    print(json.dumps(train(use_cpu="--cpu" in sys.argv, bf16="--bf16" in sys.argv,
                           torch_compile="--torch-compile" in sys.argv)))
