"""A tiny GAN on a 2-d toy distribution: the PyTorch paper's Listing 2 as a program.

The data is a ring of 8 Gaussians (radius 2, std 0.05) drawn with ember's RNG. A small MLP
generator learns to map 8-d noise onto it against an MLP discriminator; every 100 steps the program
prints both losses and the fraction of generated points within 3 std of one of the modes, and the
number of modes they cover.

    python3 examples/gan.py            # 1500 steps, some 15-25 seconds on a CPU
    python3 examples/gan.py --quick    # 200 steps, for tests
"""

import argparse
import math
import time

import ember
from ember import nn, optim

MODES, RADIUS, STD, NOISE = 8, 2.0, 0.05, 8


def ring_sample(n):
    """n points from a ring of MODES Gaussians."""
    k = ember.randint(0, MODES, (n,)).to(ember.float32)
    angle = k * (2 * math.pi / MODES)
    centers = ember.stack([RADIUS * ember.cos(angle), RADIUS * ember.sin(angle)], dim=1)
    return centers + STD * ember.randn(n, 2)


def quality(points):
    """(fraction of points within 3 std of a mode, number of modes that got at least one)."""
    angles = ember.arange(MODES, dtype=ember.float32) * (2 * math.pi / MODES)
    centers = ember.stack([RADIUS * ember.cos(angles), RADIUS * ember.sin(angles)], dim=1)
    dist = ((points[:, None, :] - centers[None, :, :]) ** 2).sum(-1).sqrt()  # (n, MODES)
    best, which = dist.min(dim=1)
    near = best < 3 * STD
    return float(near.float().mean()), len(set(which[near].tolist()))


def create_discriminator():
    return nn.Sequential(nn.Linear(2, 128), nn.LeakyReLU(0.2), nn.Linear(128, 128),
                         nn.LeakyReLU(0.2), nn.Linear(128, 1), nn.Sigmoid())


def create_generator():
    return nn.Sequential(nn.Linear(NOISE, 128), nn.ReLU(), nn.Linear(128, 128), nn.ReLU(),
                         nn.Linear(128, 2))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few hundred steps only")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    steps = args.steps or (200 if args.quick else 1500)
    ember.manual_seed(args.seed)

    batch = args.batch
    loss = nn.BCELoss()
    real_label = ember.ones(batch, 1)
    fake_label = ember.zeros(batch, 1)

    def get_noise():
        return ember.randn(batch, NOISE)

    # ---- Listing 2 of the paper, with zero_grad() added and Adam's GAN settings.
    discriminator = create_discriminator()
    generator = create_generator()
    optimD = optim.Adam(discriminator.parameters(), lr=1e-3, betas=(0.5, 0.999))
    optimG = optim.Adam(generator.parameters(), lr=1e-3, betas=(0.5, 0.999))

    def step(real_sample):
        # (1) Update Discriminator
        optimD.zero_grad()
        errD_real = loss(discriminator(real_sample), real_label)
        errD_real.backward()
        fake = generator(get_noise())
        errD_fake = loss(discriminator(fake.detach()), fake_label)
        errD_fake.backward()
        optimD.step()
        # (2) Update Generator
        optimG.zero_grad()
        errG = loss(discriminator(fake), real_label)
        errG.backward()
        optimG.step()
        return float(errD_real + errD_fake), float(errG)

    start = time.perf_counter()
    for i in range(1, steps + 1):
        errD, errG = step(ring_sample(batch))
        if i % 100 == 0 or i == steps:
            with ember.no_grad():
                frac, modes = quality(generator(ember.randn(1000, NOISE)))
            print(f"step {i:5d}  loss_D {errD:.3f}  loss_G {errG:.3f}  "
                  f"near a mode {frac:.2f}  modes covered {modes}/{MODES}")
    with ember.no_grad():
        frac, modes = quality(generator(ember.randn(2000, NOISE)))
    print(f"final: {frac:.1%} of generated points within 3 std of a mode, "
          f"{modes}/{MODES} modes covered ({time.perf_counter() - start:.1f} s)")
    return frac, modes


if __name__ == "__main__":
    main()
