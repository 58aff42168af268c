"""PutEvents through boto3 (a client gpu-reflex does not own) against the local bus.

Usage: python3 put_events.py ENDPOINT BUS
Sends good and bad entries in one call, then a call to a bus that does not exist, and prints
what boto3 parsed as one JSON object. Exits non-zero when boto3 cannot parse an answer.
"""
import json
import sys

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

endpoint, bus = sys.argv[1], sys.argv[2]
events = boto3.client(
    "events",
    endpoint_url=endpoint,
    region_name="us-east-1",
    aws_access_key_id="local",
    aws_secret_access_key="local",
    config=Config(retries={"max_attempts": 1}),
)
deep = '{"xid":' + "[" * 60000 + "79" + "]" * 60000 + "}"
entries = [
    {"Source": "gpu-reflex.node-agent", "DetailType": "GPU XID Error", "Detail": json.dumps({"xid": 79}), "EventBusName": bus, "Resources": ["arn:aws:ec2:us-east-1:000000000000:instance/i-1"]},
    {"Source": "gpu-reflex.node-agent", "DetailType": "GPU XID Error", "Detail": "not json", "EventBusName": bus},
    {"Source": "gpu-reflex.node-agent", "DetailType": "GPU XID Error", "Detail": deep, "EventBusName": bus},
    {"Source": "aws.ec2", "DetailType": "GPU XID Error", "Detail": "{}", "EventBusName": bus},
    {"Source": "gpu-reflex.node-agent", "DetailType": "GPU XID Error", "EventBusName": bus},
]
out = events.put_events(Entries=entries)
try:
    events.put_events(Entries=[{"Source": "s", "DetailType": "d", "Detail": "{}", "EventBusName": "no-such-bus"}])
    missing = None
except ClientError as err:
    missing = {"code": err.response["Error"]["Code"], "message": err.response["Error"]["Message"], "status": err.response["ResponseMetadata"]["HTTPStatusCode"]}
print(json.dumps({"FailedEntryCount": out["FailedEntryCount"], "Entries": out["Entries"], "missingBus": missing}))
