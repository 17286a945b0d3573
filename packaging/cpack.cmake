# The Debian package: cpack -G DEB in the build tree gives
# hostkeeper_VERSION-RELEASE_ARCH.deb. Configure with
# -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_BUILD_TYPE=RelWithDebInfo for a package
# that installs where Debian expects it, built as Debian builds its packages
# (-O2 -g, the binaries stripped here): packaging/install.sh does.
if(NOT CMAKE_INSTALL_PREFIX STREQUAL "/usr")
  message(STATUS "cpack: the package will install under ${CMAKE_INSTALL_PREFIX}, not /usr")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME hostkeeper)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "hostkeeper developers <dev@hostkeeper.invalid>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "keyring-backed credentials helper for Terraform and OpenTofu")
set(CPACK_PACKAGE_DESCRIPTION
    "Terraform and OpenTofu keep registry and HCP Terraform tokens in a plaintext
credentials.tfrc.json. This package keeps them in the OS keyring (any Secret
Service, such as GNOME Keyring or KeePassXC) instead: a credentials helper
that Terraform and OpenTofu run, a per-user daemon with a cache in front of
the keyring, started by systemd socket activation or on demand, and a command
line that sets both tools up, imports existing tokens and checks the set-up.")
set(CPACK_PACKAGING_INSTALL_PREFIX ${CMAKE_INSTALL_PREFIX})
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_IGNORE_FILES "/build.*/;/\\\\.git/")

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION utils)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)  # Depends from the binaries' libraries (dpkg-shlibdeps)
# ... and libidn2, which proto loads with dlopen (proto/CMakeLists.txt).
# init-system-helpers: deb-systemd-helper and deb-systemd-invoke, with which
# the maintainer scripts enable and start the registry port's system units.
set(CPACK_DEBIAN_PACKAGE_DEPENDS "libidn2-0, init-system-helpers (>= 1.50)")
# bash-completion loads the completion the package ships.
# gnome-keyring (a Secret Service) on desktops, pass on headless machines:
# keyring.backend = "auto" uses whichever is set up (hostkeeper.toml(5)).
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "gnome-keyring | pass, bash-completion")
set(CPACK_DEBIAN_PACKAGE_SUGGESTS "seahorse, libsecret-tools")
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
# Maintainer scripts: prerm stops every user's hostkeeperd (socket units
# through each running user manager, on-demand daemons by SIGTERM) so that
# none outlives the package holding tokens; postinst and postrm make running
# user managers reload the units.
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
    ${CMAKE_CURRENT_LIST_DIR}/debian/prerm ${CMAKE_CURRENT_LIST_DIR}/debian/postinst
    ${CMAKE_CURRENT_LIST_DIR}/debian/postrm)
set(CPACK_INSTALL_DEFAULT_DIRECTORY_PERMISSIONS
    OWNER_READ OWNER_WRITE OWNER_EXECUTE GROUP_READ GROUP_EXECUTE WORLD_READ WORLD_EXECUTE)

include(CPack)
