"""How the sustained run feeds an image model's images, as a validation row records it (``validate.images``).
Apart from ``data``, which needs torch, so that the readers of rows name them without importing it."""

UINT8_IMAGES = "uint8, normalised on the device"  # as image pipelines feed them (timm's ``PrefetchLoader``)
FP32_IMAGES = "fp32"  # as the engine fed them before; the validations made then do not say it
