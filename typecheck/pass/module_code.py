"""Ordinary module code, written the way PyTorch users write it (issue #23, section 6): a
GPT-style initialisation by isinstance, sizes from a config object, a DCGAN whose Sequentials
are longer than 8 layers with BatchNorm2d after each convolution. No cast in the models (one
states the dims of random token ids in main)."""

from dataclasses import dataclass
from typing import Literal as L, TypeVar, assert_type

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


class Seq(sg.Dim): ...


@dataclass
class Config:
    vocab_size: int = 65
    n_embd: int = 64


class Block(nn.Module):
    def __init__(self, config: Config) -> None:
        # The type states the sizes; the config's ints are checked against them at run time.
        self.ln = nn.LayerNorm[L[64]](config.n_embd)
        self.fc = nn.Linear[L[64], L[256]](config.n_embd, 4 * config.n_embd)
        self.proj = nn.Linear[L[256], L[64]](4 * config.n_embd, config.n_embd)

    def __call__(self, x: Tensor[T, Batch, Seq, L[64]]) -> Tensor[T, Batch, Seq, L[64]]:
        return x + self.proj(self.fc(self.ln(x)).gelu())


class TinyLM(nn.Module):
    def __init__(self, config: Config) -> None:
        self.wte = nn.Embedding[L[65], L[64]](config.vocab_size, config.n_embd)
        self.block = Block(config)
        self.ln_f = nn.LayerNorm[L[64]](config.n_embd)
        self.lm_head = nn.Linear[L[64], L[65]](config.n_embd, config.vocab_size, bias=False)
        self.apply(self._init_weights)
        for m in self.modules():  # the other spelling of the same loop
            if isinstance(m, nn.LayerNorm) and m.weight is not None:
                nn.init.ones_(m.weight)

    def _init_weights(self, module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def __call__(self, ids: Tensor[T, Batch, Seq]) -> Tensor[T, Batch, Seq, L[65]]:
        return self.lm_head(self.ln_f(self.block(self.wte(ids))))


class UntypedBlock(nn.Module):
    """The same block written with plain sizes: its layers' sizes are Open; they take typed
    input (checked against their weights at run time) and give an open width."""

    def __init__(self, config: Config) -> None:
        self.ln = nn.LayerNorm(config.n_embd)
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)

    def __call__(self, x: Tensor[T, Batch, Seq, L[64]]) -> Tensor[T, Batch, Seq, sg.Open]:
        return self.fc(self.ln(x)).gelu()


def untyped_sizes(config: Config) -> None:
    # Without type arguments, plain ints give open sizes (never int, never Unknown).
    assert_type(nn.Linear(config.n_embd, config.vocab_size), nn.Linear[sg.Open, sg.Open])
    assert_type(nn.LayerNorm(config.n_embd), nn.LayerNorm[sg.Open])


def weights_init(m: nn.Module) -> None:
    # DCGAN's initialisation, by isinstance rather than by class name.
    if isinstance(m, nn.Conv2d | nn.ConvTranspose2d):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        if m.weight is not None and m.bias is not None:
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)


def dcgan() -> tuple[nn.Sequential[nn.Chan[L[16]], nn.Chan[L[3]]], nn.Sequential[nn.Chan[L[3]], nn.Chan[L[1]]]]:
    generator = nn.Sequential(
        nn.ConvTranspose2d[L[16], L[64]](4, 1, 0, bias=False),
        nn.BatchNorm2d[L[64]](),
        nn.ReLU(),
        nn.ConvTranspose2d[L[64], L[32], nn.Doubles](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[32]](),
        nn.ReLU(),
        nn.ConvTranspose2d[L[32], L[16], nn.Doubles](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[16]](),
        nn.ReLU(),
        nn.ConvTranspose2d[L[16], L[8], nn.Doubles](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[8]](),
        nn.ReLU(),
        nn.ConvTranspose2d[L[8], L[3], nn.Doubles](4, 2, 1, bias=False),
        nn.Tanh(),
    )
    discriminator = nn.Sequential(
        nn.Conv2d[L[3], L[8]](4, 2, 1, bias=False),
        nn.LeakyReLU(0.2),
        nn.Conv2d[L[8], L[16]](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[16]](),
        nn.LeakyReLU(0.2),
        nn.Conv2d[L[16], L[32]](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[32]](),
        nn.LeakyReLU(0.2),
        nn.Conv2d[L[32], L[64]](4, 2, 1, bias=False),
        nn.BatchNorm2d[L[64]](),
        nn.LeakyReLU(0.2),
        nn.Conv2d[L[64], L[1]](4, 1, 0, bias=False),
        nn.Sigmoid(),
    )
    generator.apply(weights_init)
    discriminator.apply(weights_init)
    return generator, discriminator


def main() -> None:
    model = TinyLM(Config())
    ids = sg.randint(0, 65, (2, 8))
    logits = model(sg.cast(ids, Tensor[NoTape, Batch, Seq]))
    assert logits.shape == (2, 8, 65)
    untyped_sizes(Config())
    hidden = UntypedBlock(Config())(sg.cast(sg.randn(2, 8, 64), Tensor[NoTape, Batch, Seq, L[64]]))
    assert hidden.shape == (2, 8, 256)
    generator, discriminator = dcgan()
    noise: Tensor[NoTape, Batch, L[16], L[1], L[1]] = sg.randn(Batch(2), 16, 1, 1)
    fake = generator(noise)
    score = discriminator(fake)
    assert fake.shape == (2, 3, 64, 64) and score.shape == (2, 1, 1, 1)


if __name__ == "__main__":
    main()
