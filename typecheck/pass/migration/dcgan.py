"""The DCGAN of pytorch/examples (dcgan/main.py), ported to shapegrad at 32×32: a generator of
ConvTranspose2d + BatchNorm2d + ReLU ending in Tanh, a discriminator of Conv2d + LeakyReLU
(+ BatchNorm2d) ending in Sigmoid, weights_init, BCE, two Adam optimizers with betas (0.5,
0.999), the discriminator's and then the generator's step, twice. The first draft is
typecheck/migration_drafts/dcgan.py; each change from it is marked "# port:" (what our docs
say to write) or "# until #23 §N lands:"."""

from typing import Final, Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


# port: Final, so that the sizes keep their literal types where they are passed
nz: Final = 16
nc: Final = 3


class Generator(nn.Module):
    def __init__(self) -> None:
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d[L[16], L[32]](4, 1, 0, bias=False),
            nn.BatchNorm2d[L[32]](),
            nn.ReLU(),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d[L[32], L[16], nn.Doubles](4, 2, 1, bias=False),
            nn.BatchNorm2d[L[16]](),
            nn.ReLU(),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d[L[16], L[8], nn.Doubles](4, 2, 1, bias=False),
            nn.BatchNorm2d[L[8]](),
            nn.ReLU(),
            # state size. (ngf) x 16 x 16
            nn.ConvTranspose2d[L[8], L[3], nn.Doubles](4, 2, 1, bias=False),
            nn.Tanh(),
            # state size. (nc) x 32 x 32
        )

    def __call__(self, input: Tensor[T, Batch, L[16], L[1], L[1]]) -> Tensor[T, Batch, L[3], L[32], L[32]]:
        # port: 4×4 from 1×1 by the first transposed convolution (kernel 4, stride 1) is
        # arithmetic Python cannot compute (the later ones are typed Twice[H]): stated
        return sg.cast(self.main(input), Tensor[T, Batch, L[3], L[32], L[32]])


class Discriminator(nn.Module):
    def __init__(self) -> None:
        self.main = nn.Sequential(
            # input is (nc) x 32 x 32
            nn.Conv2d[L[3], L[8]](4, 2, 1, bias=False),
            nn.LeakyReLU(0.2),
            # state size. (ndf) x 16 x 16
            nn.Conv2d[L[8], L[16]](4, 2, 1, bias=False),
            nn.BatchNorm2d[L[16]](),
            nn.LeakyReLU(0.2),
            # state size. (ndf*2) x 8 x 8
            nn.Conv2d[L[16], L[32]](4, 2, 1, bias=False),
            nn.BatchNorm2d[L[32]](),
            nn.LeakyReLU(0.2),
            # state size. (ndf*4) x 4 x 4
            nn.Conv2d[L[32], L[1]](4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def __call__(self, input: Tensor[T, Batch, L[3], L[32], L[32]]) -> Tensor[T, Batch]:
        # port: the (B, 1, 1, 1) score as (B,): its 1×1 is a convolution's arithmetic, stated
        return sg.cast(self.main(input).reshape(-1), Tensor[T, Batch])


def weights_init(m: nn.Module) -> None:
    # port: isinstance for the class name's find("Conv") (docs/migration.md's init loop);
    # BatchNorm's affine parameters are optional
    if isinstance(m, nn.Conv2d | nn.ConvTranspose2d):
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif isinstance(m, nn.BatchNorm2d):
        if m.weight is not None and m.bias is not None:
            nn.init.normal_(m.weight, 1.0, 0.02)
            nn.init.zeros_(m.bias)


def main() -> None:
    sg.seed(0)
    netG = Generator()
    netG.apply(weights_init)
    netD = Discriminator()
    netD.apply(weights_init)
    optimizerD = sg.optim.Adam(netD, lr=0.0002, betas=(0.5, 0.999))
    optimizerG = sg.optim.Adam(netG, lr=0.0002, betas=(0.5, 0.999))
    gradsD = netD.alloc_grads()
    gradsG = netG.alloc_grads()
    real_label, fake_label = 1.0, 0.0
    batch_size = 4
    for _ in range(2):
        real = sg.rand(Batch(batch_size), nc, 32, 32) * 2 - 1  # port: a named batch size
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        gradsD.zero()
        label: Tensor[NoTape, Batch] = sg.full((Batch(batch_size),), real_label)  # port: as above
        output = netD(real.trace(gradsD))
        errD_real = sg.losses.binary_cross_entropy(output, label)
        noise: Tensor[NoTape, Batch, L[16], L[1], L[1]] = sg.randn(Batch(batch_size), nz, 1, 1)  # port
        fake = netG(noise)
        label = sg.full((Batch(batch_size),), fake_label)  # port: Batch(...) for the label's size
        output = netD(fake.detach().trace(gradsD))
        errD_fake = sg.losses.binary_cross_entropy(output, label)
        errD = errD_real + errD_fake
        errD.backward()
        optimizerD.update(netD, gradsD)
        # (2) Update G: maximize log(D(G(z)))
        gradsG.zero()
        gradsD.zero()
        label = sg.full((Batch(batch_size),), real_label)
        fake = netG(noise.trace(gradsG, gradsD))
        output = netD(fake)
        errG = sg.losses.binary_cross_entropy(output, label)
        errG.backward()
        optimizerG.update(netG, gradsG)
        print(errD.item(), errG.item())


if __name__ == "__main__":
    main()
