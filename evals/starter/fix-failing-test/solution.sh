sed -i 's|return sum(values) // len(values)|return sum(values) / len(values)|' stats/__init__.py
