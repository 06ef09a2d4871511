"""An S3-compatible server on loopback for the test suite.

moto's server, with request authentication on: after the three unsigned
calls that make a user, its access key and its policy, every request must
carry an AWS Signature Version 4 made with that key, as the real S3
demands, or it is refused. Before it is announced, the peer is checked
with boto3 (the reference client): a signed put and get go through, and
the same put signed with a wrong secret is refused.

Prints one JSON line (endpoint, region, access key, secret, bucket) once
ready, then serves until its standard input closes. Each `list` line it
reads is answered with a JSON line of what the bucket holds (`keys`) and
how many multipart uploads are still open (`uploads`), through the S3 API.
"""

import json
import os
import socket
import sys

# Read by moto when it is imported: the first three calls need no
# signature (there is no key to sign with yet), every later one does.
os.environ["INITIAL_NO_AUTH_ACTION_COUNT"] = "3"

import boto3  # noqa: E402
from botocore.exceptions import ClientError  # noqa: E402
from moto.server import ThreadedMotoServer  # noqa: E402

REGION = "us-east-1"
BUCKET = "parley-files"
POLICY = {"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}]}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def client(service, endpoint, key, secret):
    return boto3.client(
        service, endpoint_url=endpoint, region_name=REGION, aws_access_key_id=key, aws_secret_access_key=secret
    )


def main():
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    iam = client("iam", endpoint, "setup", "setup")
    iam.create_user(UserName="parley")
    key = iam.create_access_key(UserName="parley")["AccessKey"]
    iam.put_user_policy(UserName="parley", PolicyName="files", PolicyDocument=json.dumps(POLICY))
    access_key, secret = key["AccessKeyId"], key["SecretAccessKey"]

    s3 = client("s3", endpoint, access_key, secret)
    s3.create_bucket(Bucket=BUCKET)
    s3.put_object(Bucket=BUCKET, Key="peer-check", Body=b"checked")
    assert s3.get_object(Bucket=BUCKET, Key="peer-check")["Body"].read() == b"checked"
    s3.delete_object(Bucket=BUCKET, Key="peer-check")
    forged = client("s3", endpoint, access_key, secret + "x")
    try:
        forged.put_object(Bucket=BUCKET, Key="forged", Body=b"no")
    except ClientError as e:
        assert e.response["Error"]["Code"] in ("SignatureDoesNotMatch", "AccessDenied"), e.response
    else:
        raise SystemExit("the peer took a request with a wrong signature")

    print(
        json.dumps(
            {"endpoint": endpoint, "region": REGION, "access_key": access_key, "secret_key": secret, "bucket": BUCKET}
        ),
        flush=True,
    )
    for line in sys.stdin:
        if line.strip() == "list":
            listed = s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])
            uploads = s3.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
            print(json.dumps({"keys": [o["Key"] for o in listed], "uploads": len(uploads)}), flush=True)
    server.stop()


if __name__ == "__main__":
    main()
