"""The PyTorch bridge (issue 14, item 3): a small GPT written as an
nn.Module with standard modules and functions (nn.Embedding, nn.Linear,
nn.LayerNorm, nn.GELU, a causal mask buffer with masked_fill, softmax,
matmul) is traced by tgc.torch.compile_module, trained by TGC, and matches
PyTorch's own AdamW training of the same module on the same data within
1e-4 a step over 20 steps; the trained weights are written back into the
module; an operation the bridge cannot map is named with its source line."""
import copy
import os
import sys
import unittest

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from tgtest.reference import adamw, batch
from tgtest.tools import BIN

sys.path.insert(0, os.path.join(BIN, "..", "python"))
import tgc  # noqa: E402
import tgc.torch  # noqa: E402

VOCAB, SEQ, EMBD, HEADS, LAYERS, BATCH = 23, 8, 16, 2, 2, 4
TRAIN = {"batch_size": BATCH, "seq_len": SEQ, "seed": 0, "precision": "fp32",
         "optimizer": {"type": "adamw", "lr": 1e-2, "betas": [0.9, 0.95], "eps": 1e-6,
                       "weight_decay": 0.1}}
STEPS = 20


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(EMBD), nn.LayerNorm(EMBD)
        self.qkv, self.proj = nn.Linear(EMBD, 3 * EMBD), nn.Linear(EMBD, EMBD)
        self.fc, self.out = nn.Linear(EMBD, 4 * EMBD), nn.Linear(4 * EMBD, EMBD)
        self.act = nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(0.0)
        self.scale = 1.0 / (EMBD // HEADS) ** 0.5
        self.register_buffer("mask", torch.tril(torch.ones(SEQ, SEQ)).view(1, 1, SEQ, SEQ))

    def forward(self, x):
        # torch.fx cannot unpack a traced size: index it.
        b, t, c = x.size(0), x.size(1), x.size(2)
        # torch.fx cannot unpack a traced tuple either: index it.
        parts = self.qkv(self.ln1(x)).split(EMBD, dim=2)
        q, k, v = parts[0], parts[1], parts[2]
        q = q.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        k = k.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        v = v.view(b, t, HEADS, c // HEADS).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * self.scale
        att = att.masked_fill(self.mask == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(b, t, c)
        x = x + self.drop(self.proj(y))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class TinyGPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, EMBD)
        self.pos = nn.Embedding(SEQ, EMBD)
        self.blocks = nn.ModuleList([Block() for _ in range(LAYERS)])
        self.ln_f = nn.LayerNorm(EMBD)
        self.head = nn.Linear(EMBD, VOCAB, bias=False)
        # Position ids as a buffer, as Hugging Face's GPT-2 has them
        # (torch.fx traces neither torch.arange of a traced size nor a
        # buffer sliced by one: the sequence length is fixed).
        self.register_buffer("position_ids", torch.arange(SEQ))

    def forward(self, idx):
        x = self.tok(idx) + self.pos(self.position_ids)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


class TinyGPTWithLoss(TinyGPT):
    """The same model computing its own loss, as training scripts write it."""

    def forward(self, idx, targets):
        logits = super().forward(idx)
        return F.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))


class Cumsum(nn.Module):
    def __init__(self):
        super().__init__()
        self.tok = nn.Embedding(VOCAB, EMBD)

    def forward(self, idx):
        return torch.cumsum(self.tok(idx), dim=1)


class TorchBridge(unittest.TestCase):
    def test_trains_like_pytorch(self):
        torch.manual_seed(0)
        model = TinyGPT()
        reference = copy.deepcopy(model)
        tokens = torch.randint(0, VOCAB, (301,), generator=torch.Generator().manual_seed(3))
        tokens = tokens.numpy().astype(np.uint16)
        trainer = tgc.torch.compile_module(model, batch(tokens, TRAIN, 0)[0], train=TRAIN)
        self.assertIn("tg.softmax", trainer.tg_text)
        # PyTorch's AdamW with TGC's grouping: decay on matrices only.
        adam = adamw(reference.parameters(), TRAIN)
        losses = []
        for step in range(STEPS):
            x, y = batch(tokens, TRAIN, step)
            got = trainer.step(x, y)
            adam.zero_grad()
            loss = F.cross_entropy(reference(x).reshape(-1, VOCAB), y.reshape(-1))
            loss.backward()
            adam.step()
            self.assertLess(abs(got - loss.item()), 1e-4, f"step {step + 1}")
            losses.append(got)
        self.assertLess(losses[-1], losses[0], "training did not lower the loss")
        trainer.write_back()
        for (name, p), (_, q) in zip(model.named_parameters(), reference.named_parameters()):
            self.assertLess((p - q).norm().item() / max(q.norm().item(), 1e-12), 1e-3, name)

    def test_a_module_computing_its_loss(self):
        torch.manual_seed(1)
        model = TinyGPTWithLoss()
        reference = copy.deepcopy(model)
        tokens = torch.randint(0, VOCAB, (301,), generator=torch.Generator().manual_seed(4))
        tokens = tokens.numpy().astype(np.uint16)
        trainer = tgc.torch.compile_module(model, batch(tokens, TRAIN, 0), train=TRAIN)
        adam = adamw(reference.parameters(), TRAIN)
        for step in range(5):
            x, y = batch(tokens, TRAIN, step)
            got = trainer.step(x, y)
            adam.zero_grad()
            loss = reference(x, y)
            loss.backward()
            adam.step()
            self.assertLess(abs(got - loss.item()), 1e-4, f"step {step + 1}")
        # Its logits function gives the module's logits.
        x, _ = batch(tokens, TRAIN, 0)
        with torch.no_grad():
            expected = TinyGPT.forward(reference, x)
        self.assertLess((torch.from_numpy(trainer.logits(x.numpy())) - expected).norm()
                        / expected.norm(), 1e-5)

    def test_unsupported_op_is_named_with_its_line(self):
        with self.assertRaises(tgc.torch.UnsupportedError) as caught:
            tgc.torch.compile_module(Cumsum(), torch.zeros(BATCH, SEQ, dtype=torch.long),
                                     train=TRAIN)
        message = str(caught.exception)
        self.assertIn("function cumsum", message)
        self.assertRegex(message, r"test_torch_bridge\.py:\d+")


if __name__ == "__main__":
    unittest.main()
