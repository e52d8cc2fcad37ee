"""A DCGAN: a generator of transposed convolutions from noise to 3 x 64 x 64 images in [-1, 1],
a convolutional discriminator with LeakyReLU, BatchNorm in both, binary cross-entropy, and one
Adam optimizer for each network.

Written as a PyTorch program: only the import block below names ember. ``--data`` reads a file
written by ``torch.save({"images": float (N, 3, 64, 64) in [-1, 1]}, path)``.
"""

import argparse

import ember as torch
import ember.nn as nn
import ember.optim as optim
import ember.utils.data

REAL_LABEL, FAKE_LABEL = 1.0, 0.0


def weights_init(m):
    """DCGAN's initialisation: N(0, 0.02) convolutions, N(1, 0.02) BatchNorm scales."""
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight, 1.0, 0.02)
        nn.init.zeros_(m.bias)


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),  # 4 x 4
            nn.BatchNorm2d(ngf * 8),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),  # 8 x 8
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),  # 16 x 16
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),  # 32 x 32
            nn.BatchNorm2d(ngf),
            nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),  # 64 x 64
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),  # 32 x 32
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),  # 16 x 16
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),  # 8 x 8
            nn.BatchNorm2d(ndf * 4),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),  # 4 x 4
            nn.BatchNorm2d(ndf * 8),
            nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
            nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


def train_step(netG, netD, criterion, optimizerG, optimizerD, real, noise):
    """One round: D on real and generated images, then G through D. Returns the losses."""
    b = real.size(0)
    netD.zero_grad()
    label = torch.full((b,), REAL_LABEL, dtype=real.dtype)
    output = netD(real)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    fake = netG(noise)
    label.fill_(FAKE_LABEL)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    netG.zero_grad()
    label.fill_(REAL_LABEL)  # the generator wants D to call its images real
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    return errD.item(), errG.item(), D_x, D_G_z1, D_G_z2


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="DCGAN on 64 x 64 images")
    parser.add_argument("--data", default=None)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--nz", type=int, default=100, help="size of the latent vector")
    parser.add_argument("--ngf", type=int, default=64)
    parser.add_argument("--ndf", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--lr", type=float, default=0.0002)
    parser.add_argument("--beta1", type=float, default=0.5)
    parser.add_argument("--dry-run", action="store_true", help="one batch")
    parser.add_argument("--seed", type=int, default=999)
    parser.add_argument("--outf", default=None, help="folder for checkpoints")
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(args.seed)
    if args.data:
        images = torch.load(args.data)["images"]
    else:
        images = torch.rand(args.samples, 3, 64, 64) * 2 - 1
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(images),
                                         batch_size=args.batch_size, shuffle=True)
    netG, netD = Generator(args.nz, args.ngf), Discriminator(args.ndf)
    netG.apply(weights_init)
    netD.apply(weights_init)
    criterion = nn.BCELoss()
    fixed_noise = torch.randn(args.batch_size, args.nz, 1, 1)
    optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    for epoch in range(args.epochs):
        for i, (real,) in enumerate(loader):
            noise = torch.randn(real.size(0), args.nz, 1, 1)
            errD, errG, D_x, D_G_z1, D_G_z2 = train_step(netG, netD, criterion, optimizerG,
                                                         optimizerD, real, noise)
            print(f"[{epoch}/{args.epochs}][{i}/{len(loader)}] Loss_D: {errD:.4f} "
                  f"Loss_G: {errG:.4f} D(x): {D_x:.4f} D(G(z)): {D_G_z1:.4f} / {D_G_z2:.4f}")
            if args.dry_run:
                break
        with torch.no_grad():
            fake = netG(fixed_noise)
        assert fake.shape == (args.batch_size, 3, 64, 64)
        if args.outf:
            torch.save(netG.state_dict(), f"{args.outf}/netG_epoch_{epoch}.pth")
            torch.save(netD.state_dict(), f"{args.outf}/netD_epoch_{epoch}.pth")
    return netG, netD


if __name__ == "__main__":
    main()
