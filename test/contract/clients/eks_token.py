"""The token `aws eks get-token` makes (awscli's own TokenGenerator, a client gpu-reflex does not own),
at a given second, for the EKS token tests.

Usage: python3 eks_token.py CLUSTER REGION YYYYMMDDTHHMMSSZ [SESSION_TOKEN]
Credentials: AWS's documentation example key pair. Prints {"token", "url", "awscli"} as JSON.
"""
import base64
import datetime
import json
import sys
from unittest import mock

import awscli
import botocore.session
from awscli.customizations.eks.get_token import STSClientFactory, TokenGenerator

cluster, region, at = sys.argv[1], sys.argv[2], sys.argv[3]
session = botocore.session.get_session()
session.set_credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", sys.argv[4] if len(sys.argv) > 4 else None)
when = datetime.datetime.strptime(at, "%Y%m%dT%H%M%SZ")
# The signer reads the time here; everything else is awscli's own path.
with mock.patch("botocore.auth.get_current_datetime", return_value=when):
    sts = STSClientFactory(session).get_sts_client(region_name=region)
    token = TokenGenerator(sts).get_token(cluster)
url = base64.urlsafe_b64decode(token[len("k8s-aws-v1."):] + "==").decode()
print(json.dumps({"token": token, "url": url, "awscli": awscli.__version__}))
