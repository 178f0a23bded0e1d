"""The wheel carries the C library (shardpsi/_lib, put there by
python/install.sh), so it is a platform wheel, not a pure one."""
from setuptools import setup
from setuptools.dist import Distribution


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return True


setup(distclass=BinaryDistribution)
