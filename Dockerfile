# connwatch container: web and agent from one image (docker-compose.yml runs both).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    UV_PYTHON_DOWNLOADS=never \
    UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy

RUN pip install --no-cache-dir uv
# Server-side PDF reports are printed by headless Chromium (docs/reports.md, "Why Chromium").
RUN apt-get update \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium fonts-dejavu-core \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/connwatch
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-install-project --no-dev
COPY app ./app
COPY migrations ./migrations
COPY templates ./templates
COPY static ./static
COPY alembic.ini targets.example.yaml ./
RUN uv sync --frozen --no-dev

RUN useradd --system --uid 10001 --home-dir /data --create-home connwatch
USER connwatch

ENV CONNWATCH_DATA_DIR=/data \
    CONNWATCH_HOST=0.0.0.0 \
    CONNWATCH_PORT=8000 \
    PATH=/opt/connwatch/.venv/bin:$PATH
EXPOSE 8000
VOLUME ["/data"]

HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD python -c "import sys, urllib.request; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:8000/readyz', timeout=4).status == 200 else 1)"

ENTRYPOINT ["connwatch"]
CMD ["serve"]
