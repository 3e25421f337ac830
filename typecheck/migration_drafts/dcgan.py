"""First draft: the DCGAN of pytorch/examples (dcgan/main.py) at 32×32: a generator of
ConvTranspose2d + BatchNorm2d + ReLU, a discriminator of Conv2d + LeakyReLU (+ BatchNorm2d),
the weights_init by class, BCE, two Adam optimizers with betas (0.5, 0.999), written the way
a PyTorch user writes it after skimming shapegrad's docs."""

from typing import Literal as L, TypeVar

import shapegrad as sg
from shapegrad import NoTape, Tensor
from shapegrad import nn

T = TypeVar("T")


class Batch(sg.Dim): ...


nz, ngf, ndf, nc = 16, 8, 8, 3


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
        output = self.main(input)
        return output


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
        output = self.main(input)
        return output.reshape(-1)


def weights_init(m: nn.Module) -> None:
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
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
        real = sg.rand(batch_size, nc, 32, 32) * 2 - 1
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        gradsD.zero()
        label = sg.full((batch_size,), real_label)
        output = netD(real.trace(gradsD))
        errD_real = sg.losses.binary_cross_entropy(output, label)
        noise = sg.randn(batch_size, nz, 1, 1)
        fake = netG(noise)
        label = sg.full((batch_size,), fake_label)
        output = netD(fake.detach().trace(gradsD))
        errD_fake = sg.losses.binary_cross_entropy(output, label)
        errD = errD_real + errD_fake
        errD.backward()
        optimizerD.update(netD, gradsD)
        # (2) Update G: maximize log(D(G(z)))
        gradsG.zero()
        gradsD.zero()
        label = sg.full((batch_size,), real_label)
        fake = netG(noise.trace(gradsG, gradsD))
        output = netD(fake)
        errG = sg.losses.binary_cross_entropy(output, label)
        errG.backward()
        optimizerG.update(netG, gradsG)
        print(errD.item(), errG.item())


if __name__ == "__main__":
    main()
