"""A real S3-protocol server (moto's server mode) on 127.0.0.1 for the remote-logdir tests, and a fresh bucket per
test with the environment that both TensorBoard's S3 reader and ours take (``S3_ENDPOINT``, AWS credentials)."""

import logging
import os
import sys
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from tb_harness import free_port  # noqa: E402

logging.getLogger("werkzeug").setLevel(logging.WARNING)   # the S3 server logs every request otherwise


@pytest.fixture(scope="session")
def s3_endpoint():
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    yield "http://127.0.0.1:%d" % port
    server.stop()


class Bucket:
    """A bucket on the test server: ``url`` (s3://name), ``client`` (boto3), ``env`` (for child processes)."""

    def __init__(self, endpoint, env):
        import boto3

        self.name = "tbms-" + uuid.uuid4().hex[:12]
        self.url = "s3://" + self.name
        self.env = env
        self.client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1",
                                   aws_access_key_id="testing", aws_secret_access_key="testing")
        self.client.create_bucket(Bucket=self.name)

    def put(self, key, data):
        self.client.put_object(Bucket=self.name, Key=key, Body=data)

    def get(self, key):
        return self.client.get_object(Bucket=self.name, Key=key)["Body"].read()

    def keys(self, prefix=""):
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.name, Prefix=prefix)
        return sorted(o["Key"] for page in pages for o in page.get("Contents", []))


def s3_env(endpoint):
    return {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1",
            "S3_ENDPOINT": endpoint}


def use_s3(monkeypatch, endpoint):
    """Points this process at ``endpoint``: the environment, our fs layer, and TensorBoard's S3 reader (which reads
    ``S3_ENDPOINT`` once, when its gfile module is first imported)."""
    from tensorboard.compat.tensorflow_stub.io import gfile

    from tb_plugin_mindspore.io import fs

    env = s3_env(endpoint)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    for key in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        monkeypatch.delenv(key, raising=False)
    fs.reset()
    gfile.register_filesystem("s3", gfile.S3FileSystem())
    return env


@pytest.fixture
def bucket(s3_endpoint, monkeypatch):
    from tb_plugin_mindspore.io import fs

    env = use_s3(monkeypatch, s3_endpoint)
    yield Bucket(s3_endpoint, env)
    fs.reset()
