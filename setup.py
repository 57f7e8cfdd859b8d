"""Packaging for tb-plugin-mindspore.

Building the wheel also builds the frontend (``npm ci && npm run build`` in ``frontend/``) into
``tb_plugin_mindspore/static/``; the built bundle is never committed. Set ``TB_MINDSPORE_SKIP_FRONTEND=1`` to reuse
a bundle that is already there.
"""

import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
FRONTEND = os.path.join(HERE, "frontend")
STATIC = os.path.join(HERE, "tb_plugin_mindspore", "static")
os.makedirs(STATIC, exist_ok=True)  # listed as a (data-only) package below; filled by the frontend build


def build_frontend():
    bundle = os.path.join(STATIC, "index.js")
    if os.environ.get("TB_MINDSPORE_SKIP_FRONTEND") == "1" and os.path.exists(bundle):
        return
    if not os.path.isdir(FRONTEND):
        if os.path.exists(bundle):
            return  # building from an sdist that already holds the bundle
        raise RuntimeError("frontend/ is missing and no built bundle exists in tb_plugin_mindspore/static/")
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("building tb-plugin-mindspore needs Node.js and npm (for the frontend bundle)")
    if not os.path.isdir(os.path.join(FRONTEND, "node_modules")):
        subprocess.check_call([npm, "ci", "--no-audit", "--no-fund"], cwd=FRONTEND)
    subprocess.check_call([npm, "run", "build"], cwd=FRONTEND)
    for built in (bundle, os.path.join(STATIC, "report.js")):   # the tab, and the page of `tb-mindspore report`
        if not os.path.exists(built):
            raise RuntimeError("the frontend build did not produce %s" % built)


class BuildPyWithFrontend(build_py):
    def run(self):
        build_frontend()
        super().run()


with open(os.path.join(HERE, "README.md"), encoding="utf-8") as f:
    long_description = f.read()

setup(
    name="tb-plugin-mindspore",
    version="0.1.0",
    description="A TensorBoard tab and companion callbacks that show whether a MindSpore training run is healthy",
    long_description=long_description,
    long_description_content_type="text/markdown",
    license="Apache-2.0",
    python_requires=">=3.9",
    packages=[
        "tb_plugin_mindspore",
        "tb_plugin_mindspore.io",
        "tb_plugin_mindspore.contract",
        "tb_plugin_mindspore.landscape",
        "tb_plugin_mindspore.writing",
        "tb_plugin_mindspore.sources",
        "tb_plugin_mindspore.health",
        "tb_plugin_mindspore.health.rules",
        "tb_plugin_mindspore.compare",
        "tb_plugin_mindspore.answers",
        "tb_plugin_mindspore.server",
        "tb_plugin_mindspore.commands",
        "tb_plugin_mindspore.static",  # the built frontend bundle: data only, listed so setuptools ships it quietly
        "tb_mindspore_callbacks",
        "tb_mindspore_callbacks.common",
        "tb_mindspore_callbacks.cells",
        "tb_mindspore_callbacks.recorders",
        "tb_mindspore_callbacks.landscape",
        "tb_mindspore_callbacks.torch_style",
    ],
    # The companion callbacks live in callbacks/ and install as tb_mindspore_callbacks (never as `callbacks`).
    package_dir={"tb_mindspore_callbacks": "callbacks"},
    package_data={"tb_plugin_mindspore.static": ["*"]},
    include_package_data=True,
    install_requires=[
        "tensorboard>=2.14",
        "numpy",
        "protobuf>=3.20",
        "werkzeug>=2.0",
        "google-crc32c>=1.5",
    ],
    extras_require={
        # Only the callbacks and `tb-mindspore demo` need MindSpore; its datasets need numpy < 2.
        "mindspore": ["mindspore>=2.3", "numpy<2"],
        # PyTorch runs recorded in the same data contract (tb_mindspore_callbacks.torch_style; the reference side of
        # `tb-mindspore compare`). The CPU build installs from the package index; add transformers for the
        # TrainerCallback.
        "torch": ["torch>=2.1"],
        # Remote logdirs (s3:// and S3-compatible stores such as OBS); gs:// needs gcsfs, hdfs:// pyarrow.
        "remote": ["fsspec>=2023.1", "s3fs>=2023.1", "boto3"],
        # bench/fuzz.py: coverage-guided fuzzing of the readers (wheels for CPython 3.11 on x86-64 Linux).
        "fuzz": ["atheris>=2.3"],
        "test": ["pytest>=7", "pytest-xdist>=3.5", "playwright>=1.40", "hypothesis>=6", "tbparse>=0.0.8",
                 "tensorboardX>=2.6",
                 "fsspec>=2023.1", "s3fs>=2023.1", "boto3", "moto[server]>=5"],
    },
    entry_points={
        "tensorboard_plugins": ["mindspore = tb_plugin_mindspore.loader:MindSporeLoader"],
        "console_scripts": ["tb-mindspore = tb_plugin_mindspore.cli:main"],
    },
    cmdclass={"build_py": BuildPyWithFrontend},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Topic :: Scientific/Engineering :: Artificial Intelligence",
    ],
)
