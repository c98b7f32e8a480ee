from kafkalab import image


def test_recipe_is_debian_only_and_target_neutral():
    cmd = image.mmdebstrap_command(
        image.recipe_path(), image.rootfs(), "http://mirror.invalid/debian"
    )
    assert cmd[0] == "mmdebstrap"
    include = next(a for a in cmd if a.startswith("--include="))
    for pkg in ("systemd", "openssh-server", "openjdk-17-jre-headless", "python3", "sudo"):
        assert pkg in include.split("=", 1)[1].split(",")
    assert cmd[-3:] == ["bookworm", str(image.rootfs()), "http://mirror.invalid/debian"]
    hooks = " ".join(a for a in cmd if a.startswith("--customize-hook="))
    assert "useradd" in hooks and "vagrant" in hooks
    assert "rm -f /etc/ssh/ssh_host_" in hooks  # no shared host keys


def test_cache_key_follows_the_recipe(tmp_path):
    recipe = tmp_path / "r.yml"
    recipe.write_text("suite: bookworm\npackages: [systemd]\n")
    first = image.recipe_hash(recipe)
    recipe.write_text("suite: bookworm\npackages: [systemd, sudo]\n")
    assert image.recipe_hash(recipe) != first
    assert image.image_dir(recipe).name == f"debian-base-{image.recipe_hash(recipe)}"
